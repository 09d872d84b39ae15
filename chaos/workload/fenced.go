package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/fencing"
)

// writeLimit bounds one fenced write: its transaction, including the wait
// for another writer's.
const writeLimit = 10 * time.Second

// Fenced is the resource of checker C3: a real database, written through
// the library's fencing guard. A write is a transaction that first calls
// fencing's Check with the holder's fence, then inserts a row in a log of
// writes, and commits only if Check passed; the database decides, and
// refuses a fence older than one it has committed. Every write, accepted
// or refused, goes into the history, in the order the database decided.
// Each lock key is a resource of its own, with its own fences.
//
// An unguarded store (NewUnguarded) makes the same writes without Check:
// it accepts everything, which is C3's negative control.
type Fenced struct {
	h      *history.History
	db     *sql.DB
	guard  *fencing.Guard // nil: unguarded
	insert string         // the log's insert: resource, hold, client, fence
	logged string         // the log, in commit order

	// mu orders each decision and its record in the history: a commit and
	// its record happen under it, and so does the record of a refusal.
	// The database's own lock on the resource's fence keeps two guarded
	// transactions on one resource from being past Check at once, so mu
	// only makes the history's order the database's. Writes to different
	// resources run at once, and their rows may enter the log in another
	// order than they commit: the log's order is the commit order per
	// resource.
	mu   sync.Mutex
	errs []error
}

// NewFenced returns a store over db, which speaks d (PostgreSQL or
// SQLite): it creates the guard's table and the log of writes, and records
// into h.
func NewFenced(ctx context.Context, h *history.History, db *sql.DB, d fencing.Dialect) (*Fenced, error) {
	g, err := fencing.New(d)
	if err != nil {
		return nil, err
	}
	if err := g.CreateTable(ctx, db); err != nil {
		return nil, err
	}
	return newStore(ctx, h, db, d, g)
}

// NewUnguarded returns a store like NewFenced's whose writes skip the
// guard: every write that reaches the database is accepted, however stale.
func NewUnguarded(ctx context.Context, h *history.History, db *sql.DB, d fencing.Dialect) (*Fenced, error) {
	return newStore(ctx, h, db, d, nil)
}

func newStore(ctx context.Context, h *history.History, db *sql.DB, d fencing.Dialect, g *fencing.Guard) (*Fenced, error) {
	if h == nil || db == nil {
		return nil, errors.New("workload: a fenced store needs a history and a database")
	}
	f := &Fenced{h: h, db: db, guard: g, logged: "SELECT resource, hold, client, fence FROM chaos_writes ORDER BY seq"}
	var ddl string
	switch d {
	case fencing.PostgreSQL:
		ddl = "CREATE TABLE chaos_writes (seq BIGSERIAL PRIMARY KEY, resource TEXT NOT NULL, hold INTEGER NOT NULL, client INTEGER NOT NULL, fence BIGINT NOT NULL)"
		f.insert = "INSERT INTO chaos_writes (resource, hold, client, fence) VALUES ($1, $2, $3, $4)"
	case fencing.SQLite:
		ddl = "CREATE TABLE chaos_writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, resource TEXT NOT NULL, hold INTEGER NOT NULL, client INTEGER NOT NULL, fence BIGINT NOT NULL)"
		f.insert = "INSERT INTO chaos_writes (resource, hold, client, fence) VALUES (?, ?, ?, ?)"
	default:
		return nil, fmt.Errorf("workload: the fenced store runs on PostgreSQL or SQLite, not %v", d)
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return nil, fmt.Errorf("workload: creating the log of fenced writes: %w", err)
	}
	return f, nil
}

// Guarded reports whether writes go through the guard.
func (f *Fenced) Guarded() bool { return f.guard != nil }

// Write offers a write to resource (the lock key) from the given hold with
// its fence and reports whether the database committed it. A write that fails for another reason
// than a stale fence is not recorded as a write; it is kept for Errs and
// noted in the history.
func (f *Fenced) Write(resource string, hold, client int, fence int64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), writeLimit)
	defer cancel()
	ok, err := f.write(ctx, resource, hold, client, fence)
	if err != nil {
		f.mu.Lock()
		f.errs = append(f.errs, fmt.Errorf("client %d, fence %d: %w", client, fence, err))
		f.mu.Unlock()
		f.h.Notef("client %d: the fenced store failed its write with fence %d: %v", client, fence, err)
	}
	return ok
}

func (f *Fenced) write(ctx context.Context, resource string, hold, client int, fence int64) (bool, error) {
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if f.guard != nil {
		err := f.guard.Check(ctx, tx, resource, fence)
		var stale *fencing.StaleError
		if errors.As(err, &stale) {
			f.mu.Lock()
			f.h.Write(history.Write{Key: resource, Hold: hold, Client: client, Fence: fence, Accepted: false})
			f.mu.Unlock()
			f.h.Notef("client %d: the database refused its write: %v", client, err)
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	if _, err := tx.ExecContext(ctx, f.insert, resource, hold, client, fence); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := tx.Commit(); err != nil {
		return false, err
	}
	f.h.Write(history.Write{Key: resource, Hold: hold, Client: client, Fence: fence, Accepted: true})
	return true, nil
}

// Errs returns the writes that failed for another reason than a stale
// fence.
func (f *Fenced) Errs() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.errs...)
}

// Committed reads the database's own log of the writes it committed, in
// commit order per resource, as Writes with Key (the resource), Hold,
// Client and Fence set.
func (f *Fenced) Committed(ctx context.Context) ([]history.Write, error) {
	rows, err := f.db.QueryContext(ctx, f.logged)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []history.Write
	for rows.Next() {
		var w history.Write
		if err := rows.Scan(&w.Key, &w.Hold, &w.Client, &w.Fence); err != nil {
			return nil, err
		}
		w.Accepted = true
		out = append(out, w)
	}
	return out, rows.Err()
}
