package sqltest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/fencing"
	"github.com/quorumlock/quorumlock/fencing/sqltest"
)

// callCheck runs SELECT <table>_check(resource, fence) in a transaction of
// its own, committed if the call returned. It returns the SQLSTATE of the
// error, "" for none.
func callCheck(t *testing.T, d sqltest.Database, g *fencing.Guard, resource string, fence any) (string, string) {
	t.Helper()
	ctx := context.Background()
	tx, err := d.DB.BeginTx(ctx, nil)
	require.NoError(t, err)
	var got int64
	err = tx.QueryRowContext(ctx, "SELECT "+g.Function()+"($1, $2)", resource, fence).Scan(&got)
	if err != nil {
		require.NoError(t, tx.Rollback())
		var pe *pgconn.PgError
		require.True(t, errors.As(err, &pe), "not a PostgreSQL error: %v", err)
		return pe.Code, pe.Message
	}
	require.NoError(t, tx.Commit())
	assert.Equal(t, fence, got, "the function returns the fence it recorded")
	return "", ""
}

func TestSQLFunction(t *testing.T) {
	pg := sqltest.StartPostgres(t)
	d := sqltest.PostgreSQL(t, pg)
	ctx := context.Background()
	g, err := fencing.New(fencing.PostgreSQL)
	require.NoError(t, err)
	require.NoError(t, g.InstallFunction(ctx, d.DB))
	require.NoError(t, g.InstallFunction(ctx, d.DB), "installed twice")

	t.Run("the same rules as Check", func(t *testing.T) {
		tests := []struct {
			fence int64
			code  string
		}{{5, ""}, {5, ""}, {7, ""}, {6, fencing.StaleSQLState}, {1, fencing.StaleSQLState}, {8, ""}}
		for i, tt := range tests {
			code, msg := callCheck(t, d, g, "fn", tt.fence)
			assert.Equal(t, tt.code, code, "call %d with fence %d: %s", i, tt.fence, msg)
		}
		code, msg := callCheck(t, d, g, "fn", int64(7))
		assert.Equal(t, fencing.StaleSQLState, code)
		assert.Equal(t, `fencing: stale fence: resource "fn": fence 7 is older than 8, already recorded`, msg,
			"the same text as *StaleError's")
		assert.Equal(t, int64(8), highest(t, d, g, "fn"))
	})
	t.Run("bad input", func(t *testing.T) {
		tests := []struct {
			name     string
			resource string
			fence    any
		}{
			{"empty resource", "", int64(1)},
			{"zero fence", "fn-bad", int64(0)},
			{"negative fence", "fn-bad", int64(-3)},
			{"NULL fence", "fn-bad", nil},
		}
		for _, tt := range tests {
			code, msg := callCheck(t, d, g, tt.resource, tt.fence)
			assert.Equal(t, "22023", code, "%s: %s", tt.name, msg)
			assert.Contains(t, msg, "fencing: invalid argument", tt.name)
		}
		_, ok, err := g.Highest(ctx, d.DB, "fn-bad")
		require.NoError(t, err)
		assert.False(t, ok, "nothing recorded")
	})
	t.Run("Check and the function share the table", func(t *testing.T) {
		require.NoError(t, checkIn(t, d, g, "shared", 10, true))
		code, _ := callCheck(t, d, g, "shared", int64(9))
		assert.Equal(t, fencing.StaleSQLState, code)
		code, _ = callCheck(t, d, g, "shared", int64(12))
		assert.Equal(t, "", code)
		var se *fencing.StaleError
		require.ErrorAs(t, checkIn(t, d, g, "shared", 11, true), &se)
		assert.Equal(t, int64(12), se.Highest)
	})
	t.Run("an older call waits for a newer transaction, then fails", func(t *testing.T) {
		newer, err := d.DB.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, g.Check(ctx, newer, "wait", 20))
		done := make(chan string, 1)
		go func() {
			tx, err := d.DB.BeginTx(ctx, nil)
			if err != nil {
				done <- err.Error()
				return
			}
			defer tx.Rollback()
			_, err = tx.ExecContext(ctx, "SELECT "+g.Function()+"($1, $2)", "wait", int64(19))
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				done <- pe.Code
				return
			}
			done <- "no SQLSTATE: " + errString(err)
		}()
		select {
		case code := <-done:
			t.Fatalf("the older call returned while the newer transaction was open: %s", code)
		case <-time.After(300 * time.Millisecond):
		}
		require.NoError(t, newer.Commit())
		select {
		case code := <-done:
			assert.Equal(t, fencing.StaleSQLState, code)
		case <-time.After(15 * time.Second):
			t.Fatal("the older call did not return after the newer transaction committed")
		}
	})
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
