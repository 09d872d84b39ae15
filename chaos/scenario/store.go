package scenario

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/fencing/sqltest"
)

// StoreEnv names the environment variable that picks the database of
// checker C3's fenced store: "postgres" or "sqlite". Unset, it is
// PostgreSQL when the postgresql package's initdb and postgres are
// installed, and SQLite otherwise.
const StoreEnv = "REDLOCK_CHAOS_STORE"

// Stores hands each run a fresh database for its fenced store: a new
// SQLite file, or a new database on one PostgreSQL server the suite starts
// for all its runs.
type Stores struct {
	pg   *sqltest.Postgres // nil: SQLite
	name string
}

// OpenStores picks the database as StoreEnv says, starting the PostgreSQL
// server if it is the one, with its shutdown registered on tb. A
// PostgreSQL that was asked for or is installed but does not start fails
// tb; it never falls back.
func OpenStores(tb testing.TB) (*Stores, error) {
	kind := os.Getenv(StoreEnv)
	if kind == "" {
		kind = "sqlite"
		if _, err := sqltest.PostgresBin(); err == nil {
			kind = "postgres"
		}
	}
	s := &Stores{}
	var d sqltest.Database
	switch kind {
	case "postgres":
		s.pg = sqltest.StartPostgres(tb)
		d = sqltest.PostgreSQL(tb, s.pg)
	case "sqlite":
		d = s.sqlite(tb)
	default:
		return nil, fmt.Errorf("%s=%q: want postgres or sqlite", StoreEnv, kind)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if s.name, err = d.Version(ctx); err != nil {
		return nil, fmt.Errorf("reading the store's version: %w", err)
	}
	return s, nil
}

// Name says which database judges C3, e.g. "PostgreSQL 15.18, read
// committed".
func (s *Stores) Name() string { return s.name }

// New returns a fresh, empty database, closed through tb.Cleanup.
func (s *Stores) New(tb testing.TB) sqltest.Database {
	if s.pg != nil {
		return sqltest.PostgreSQL(tb, s.pg)
	}
	return s.sqlite(tb)
}

// sqlite opens a new SQLite file without fsync on commit: the store is
// there for its decisions, not its durability, and a slow disk would
// lengthen every critical section.
func (s *Stores) sqlite(tb testing.TB) sqltest.Database {
	return sqltest.SQLite(tb, "synchronous(OFF)")
}
