package sqltest

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/fencing"
)

// Database is one real database a test runs against, with the dialect
// the guard speaks to it.
type Database struct {
	Name    string // "SQLite" or "PostgreSQL"
	Dialect fencing.Dialect
	DB      *sql.DB
}

// SQLite returns a new SQLite database in a file under tb.TempDir, opened
// with OpenSQLite's settings and pragmas.
func SQLite(tb testing.TB, pragmas ...string) Database {
	tb.Helper()
	return Database{Name: "SQLite", Dialect: fencing.SQLite, DB: OpenSQLite(tb, filepath.Join(tb.TempDir(), "fencing.db"), pragmas...)}
}

// PostgreSQL returns a new, empty database on the server pg.
func PostgreSQL(tb testing.TB, pg *Postgres) Database {
	tb.Helper()
	db, _ := pg.NewDatabase(tb)
	return Database{Name: "PostgreSQL", Dialect: fencing.PostgreSQL, DB: db}
}

// Both returns a new SQLite database and a new database on pg.
func Both(tb testing.TB, pg *Postgres) []Database {
	tb.Helper()
	return []Database{SQLite(tb), PostgreSQL(tb, pg)}
}

// Version returns the database's name, version and default isolation
// level, e.g. "PostgreSQL 15.18, read committed" or "SQLite 3.54.1,
// serializable".
func (d Database) Version(ctx context.Context) (string, error) {
	var v, iso string
	if d.Dialect == fencing.SQLite {
		// SQLite has one isolation level: transactions are serializable.
		iso = "serializable"
		if err := d.DB.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %s, %s", d.Name, v, iso), nil
	}
	if err := d.DB.QueryRowContext(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "", err
	}
	v, _, _ = strings.Cut(v, " ") // "15.18 (Debian 15.18-0+deb12u1)"
	if err := d.DB.QueryRowContext(ctx, "SHOW default_transaction_isolation").Scan(&iso); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s, %s", d.Name, v, iso), nil
}
