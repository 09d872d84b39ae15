package sqltest_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/fencing"
	"github.com/quorumlock/quorumlock/fencing/sqltest"
)

// accounts creates a table whose rows carry their own fence column, with
// rows 1 (fence 0), 2 (fence NULL) and 3 (fence 7).
func accounts(t *testing.T, d sqltest.Database) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence BIGINT DEFAULT 0)",
		"INSERT INTO accounts (id, balance, fence) VALUES (1, 100, 0), (2, 100, NULL), (3, 100, 7)",
	} {
		_, err := d.DB.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
}

func account(t *testing.T, d sqltest.Database, id int) (balance, fence int64) {
	t.Helper()
	err := d.DB.QueryRowContext(context.Background(), "SELECT balance, COALESCE(fence, 0) FROM accounts WHERE id = "+itoa(id)).Scan(&balance, &fence)
	require.NoError(t, err)
	return balance, fence
}

func TestUpdate_Contract(t *testing.T) {
	type write struct {
		fence   int64
		balance int64
		stale   int64 // the row's fence that must refuse it; 0: it must land
	}
	tests := []struct {
		name    string
		id      int
		writes  []write
		balance int64 // the row at the end
		fence   int64
	}{
		{name: "a first fenced write lands", id: 1, writes: []write{{fence: 5, balance: 1}}, balance: 1, fence: 5},
		{name: "the same holder writes again", id: 1, writes: []write{{fence: 5, balance: 1}, {fence: 5, balance: 2}}, balance: 2, fence: 5},
		{name: "the same holder writes the same values again", id: 1, writes: []write{{fence: 5, balance: 1}, {fence: 5, balance: 1}}, balance: 1, fence: 5},
		{name: "a newer holder writes", id: 3, writes: []write{{fence: 8, balance: 1}}, balance: 1, fence: 8},
		{name: "an older holder is refused", id: 3, writes: []write{{fence: 6, balance: 1, stale: 7}}, balance: 100, fence: 7},
		{name: "an older holder after a newer one", id: 1, writes: []write{{fence: 9, balance: 1}, {fence: 8, balance: 2, stale: 9}}, balance: 1, fence: 9},
		{name: "a NULL fence counts as 0", id: 2, writes: []write{{fence: 1, balance: 1}}, balance: 1, fence: 1},
	}
	pg := sqltest.StartPostgres(t)
	ctx := context.Background()
	for _, d := range sqltest.Both(t, pg) {
		t.Run(d.Name, func(t *testing.T) {
			g, err := fencing.New(d.Dialect)
			require.NoError(t, err)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					_, err := d.DB.ExecContext(ctx, "DROP TABLE IF EXISTS accounts")
					require.NoError(t, err)
					accounts(t, d)
					row := fencing.Row{Table: "accounts", Key: "id", ID: tt.id, Fence: "fence"}
					for i, w := range tt.writes {
						err := g.Update(ctx, d.DB, row, w.fence, fencing.Set{Column: "balance", Value: w.balance})
						if w.stale == 0 {
							assert.NoError(t, err, "write %d", i)
							continue
						}
						var se *fencing.StaleError
						if assert.ErrorAs(t, err, &se, "write %d", i) {
							assert.Equal(t, fencing.StaleError{Resource: "accounts id=" + itoa(tt.id), Fence: w.fence, Highest: w.stale}, *se)
						}
						assert.ErrorIs(t, err, fencing.ErrStale)
					}
					balance, fence := account(t, d, tt.id)
					assert.Equal(t, tt.balance, balance, "balance")
					assert.Equal(t, tt.fence, fence, "fence")
				})
			}
			t.Run("a missing row is not found, not success", func(t *testing.T) {
				err := g.Update(ctx, d.DB, fencing.Row{Table: "accounts", Key: "id", ID: 99, Fence: "fence"}, 5)
				assert.ErrorIs(t, err, fencing.ErrNotFound)
				assert.NotErrorIs(t, err, fencing.ErrStale)
			})
			t.Run("a nil transaction is invalid", func(t *testing.T) {
				var tx *sql.Tx
				err := g.Update(ctx, tx, fencing.Row{Table: "accounts", Key: "id", ID: 1, Fence: "fence"}, 5)
				assert.ErrorIs(t, err, fencing.ErrInvalid)
			})
		})
	}
}

// TestUpdate_OlderWaitsForNewerThenFails: an older holder's UPDATE of a row
// a newer holder's open transaction has written waits, and changes nothing
// once the newer commits.
func TestUpdate_OlderWaitsForNewerThenFails(t *testing.T) {
	pg := sqltest.StartPostgres(t)
	ctx := context.Background()
	for _, d := range sqltest.Both(t, pg) {
		t.Run(d.Name, func(t *testing.T) {
			g, err := fencing.New(d.Dialect)
			require.NoError(t, err)
			accounts(t, d)
			row := fencing.Row{Table: "accounts", Key: "id", ID: 3, Fence: "fence"}
			newer, err := d.DB.BeginTx(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, g.Update(ctx, newer, row, 9, fencing.Set{Column: "balance", Value: 9}))
			done := make(chan error, 1)
			go func() { done <- g.Update(ctx, d.DB, row, 8, fencing.Set{Column: "balance", Value: 8}) }()
			select {
			case err := <-done:
				t.Fatalf("the older update returned while the newer transaction was open: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			require.NoError(t, newer.Commit())
			select {
			case err = <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("the older update did not return after the newer transaction committed")
			}
			var se *fencing.StaleError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, int64(9), se.Highest)
			balance, fence := account(t, d, 3)
			assert.Equal(t, int64(9), balance)
			assert.Equal(t, int64(9), fence)
		})
	}
}
