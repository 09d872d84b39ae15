package sqltest

import (
	"context"
	"database/sql"
	"net/url"
	"strconv"
	"testing"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver, pure Go
)

// SQLiteBusyTimeout is how long a SQLite connection waits for another
// connection's write lock before it fails with SQLITE_BUSY.
const SQLiteBusyTimeout = 10 * time.Second

// SQLiteDSN returns the data source name of a SQLite database file for
// modernc.org/sqlite: default journal mode and transactions (BEGIN
// DEFERRED), and a busy timeout of SQLiteBusyTimeout, so that a writer
// waits for the one before it instead of failing at once. Each of pragmas,
// such as "synchronous(OFF)", is run on every new connection too.
func SQLiteDSN(path string, pragmas ...string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(SQLiteBusyTimeout.Milliseconds(), 10)+")")
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	return "file:" + path + "?" + q.Encode()
}

// OpenSQLite opens (and creates) the SQLite database file at path, with
// SQLiteDSN's settings and pragmas, and registers its closing with
// tb.Cleanup.
func OpenSQLite(tb testing.TB, path string, pragmas ...string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", SQLiteDSN(path, pragmas...))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		tb.Fatalf("sqltest: opening SQLite %s: %v", path, err)
	}
	return db
}
