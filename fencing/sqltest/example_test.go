package sqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver, pure Go

	"github.com/quorumlock/quorumlock/fencing"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/redlocktest"
)

// credit adds amount to account 1 in one transaction, under fence: the
// guard's check first, then the write, and a commit only if both passed.
func credit(ctx context.Context, db *sql.DB, guard *fencing.Guard, fence int64, amount int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // a no-op once committed
	if err := guard.Check(ctx, tx, "ledger:1", fence); err != nil {
		return err // errors.Is(err, fencing.ErrStale): a newer holder has written
	}
	if _, err := tx.ExecContext(ctx, "UPDATE ledger SET balance = balance + ? WHERE id = 1", amount); err != nil {
		return err
	}
	return tx.Commit()
}

// A holder paused past its lock's validity comes back after the next
// holder has written, and its write is refused: the lock's fence, checked
// by the database in the writer's transaction. In-process masters and a
// SQLite file stand in for five Redis masters and the real database.
func Example_makingAStaleHolderHarmless() {
	ctx := context.Background()
	masters, err := redlocktest.Start(3)
	if err != nil {
		log.Fatal(err)
	}
	defer masters.Close()
	c, err := redlock.NewFromAddrs(masters.Addrs(),
		// What in-process masters need, not advice for real ones: they
		// report no state for the restart guard to read, and answer slowly.
		redlock.WithTrustUnreadable(), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	dir, err := os.MkdirTemp("", "fencing-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// SQLite runs one writer at a time: the busy timeout makes a second
	// writer wait for the first instead of failing with SQLITE_BUSY.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "ledger.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	guard, err := fencing.New(fencing.SQLite)
	if err != nil {
		log.Fatal(err)
	}
	if err := guard.CreateTable(ctx, db); err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE ledger (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL); INSERT INTO ledger VALUES (1, 0)"); err != nil {
		log.Fatal(err)
	}

	// Holder A takes the lock, and is paused before it writes until its
	// lock has passed on (here it just lets go).
	a, err := c.TryLock(ctx, "ledger:1", time.Second)
	if err != nil {
		log.Fatal(err)
	}
	paused := a.Fence()
	a.Release(ctx)

	// Holder B writes under Do, with the fence of the lock Do holds.
	err = c.Do(ctx, "ledger:1", 10*time.Second, func(ctx context.Context) error {
		l, _ := redlock.FromContext(ctx)
		return credit(ctx, db, guard, l.Fence(), 100)
	})
	fmt.Println("B:", err)

	// A wakes up and writes with its old fence.
	err = credit(ctx, db, guard, paused, 100)
	var stale *fencing.StaleError
	fmt.Println("A refused:", errors.Is(err, fencing.ErrStale), errors.As(err, &stale) && stale.Fence == paused)

	var balance int
	if err := db.QueryRowContext(ctx, "SELECT balance FROM ledger WHERE id = 1").Scan(&balance); err != nil {
		log.Fatal(err)
	}
	fmt.Println("balance:", balance)
	// Output:
	// B: <nil>
	// A refused: true true
	// balance: 100
}
