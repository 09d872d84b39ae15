package fencing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// DefaultTable is the table a Guard records fences in unless WithTable
// names another.
const DefaultTable = "quorumlock_fences"

// Execer runs a statement: *sql.DB, *sql.Tx and *sql.Conn are Execers.
type Execer interface {
	// ExecContext runs a statement that returns no rows, as
	// (*sql.DB).ExecContext does.
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Querier runs statements and single-row queries: *sql.DB, *sql.Tx and
// *sql.Conn are Queriers.
type Querier interface {
	Execer
	// QueryRowContext runs a query that returns at most one row, as
	// (*sql.DB).QueryRowContext does.
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Guard checks fences against one table in one dialect. It holds no
// connection and no state besides its SQL, so one Guard serves every
// goroutine.
type Guard struct {
	dialect Dialect
	table   string
	sql     statements
}

// Option configures a Guard.
type Option interface{ apply(*Guard) }

type optionFunc func(*Guard)

func (f optionFunc) apply(g *Guard) { f(g) }

// WithTable sets the table of recorded fences. Default DefaultTable
// ("quorumlock_fences"). It must be a plain identifier, optionally
// schema-qualified (schema.name): letters, digits and underscores, at most
// 57 characters a part. It is not quoted, so PostgreSQL folds it to lower
// case.
func WithTable(name string) Option { return optionFunc(func(g *Guard) { g.table = name }) }

// New returns a Guard for the given dialect. It fails with ErrInvalid for
// an unknown dialect or a table name that is not a plain identifier.
func New(d Dialect, opts ...Option) (*Guard, error) {
	if !d.valid() {
		return nil, invalid("unknown dialect %v", d)
	}
	g := &Guard{dialect: d, table: DefaultTable}
	for _, o := range opts {
		if o != nil {
			o.apply(g)
		}
	}
	if err := checkIdent("table", g.table); err != nil {
		return nil, err
	}
	g.sql = d.statements(g.table)
	return g, nil
}

// Dialect returns the guard's dialect.
func (g *Guard) Dialect() Dialect { return g.dialect }

// Table returns the name of the table of recorded fences.
func (g *Guard) Table() string { return g.table }

// DDL returns the statement that creates the table of recorded fences if it
// does not exist: one row per resource, its name the primary key, and the
// highest fence recorded for it. In PostgreSQL:
//
//	CREATE TABLE IF NOT EXISTS quorumlock_fences (
//		resource text PRIMARY KEY,
//		fence bigint NOT NULL CHECK (fence > 0))
//
// SQLite uses TEXT and INTEGER; MySQL VARCHAR(255) and BIGINT, with InnoDB.
func (g *Guard) DDL() string { return g.sql.ddl }

// CreateTable runs DDL on db. It is safe to run more than once.
func (g *Guard) CreateTable(ctx context.Context, db Execer) error {
	if isNil(db) {
		return invalid("nil database")
	}
	if _, err := db.ExecContext(ctx, g.sql.ddl); err != nil {
		return fmt.Errorf("fencing: creating table %s: %w", g.table, err)
	}
	return nil
}

// Check records fence as the highest seen for resource, in tx, and returns
// nil; or, if the resource has already recorded a higher fence, it returns
// a *StaleError (errors.Is(err, ErrStale)) and records nothing. A fence
// equal to the recorded one passes: the same holder may write again.
//
// The record is part of tx: it lasts only if tx commits, and its row lock
// makes every other guarded transaction of the resource wait until tx ends.
// Call Check first in tx, before the writes it guards, and commit only if
// it returned nil; after ErrStale, roll tx back. See the package
// documentation for the isolation level.
//
// A nil tx, an empty resource or a fence below 1 is ErrInvalid. Any other
// error is the database's, and tx must not commit then either.
func (g *Guard) Check(ctx context.Context, tx *sql.Tx, resource string, fence int64) error {
	switch {
	case tx == nil:
		return invalid("nil transaction: the check must run in the transaction of the writes it guards")
	case resource == "":
		return invalid("empty resource name")
	}
	if err := checkFence(resource, fence); err != nil {
		return err
	}
	if g.dialect == MySQL {
		return g.checkMySQL(ctx, tx, resource, fence)
	}
	var recorded int64
	err := tx.QueryRowContext(ctx, g.sql.raise, resource, fence).Scan(&recorded)
	if err == nil {
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("fencing: resource %q: recording fence %d: %w", resource, fence, err)
	}
	// The upsert found a higher fence and left the row as it was, locked
	// for tx, so the read sees the fence that refused this one.
	var highest int64
	if err := tx.QueryRowContext(ctx, g.sql.read, resource).Scan(&highest); err != nil {
		return fmt.Errorf("%w: resource %q: fence %d not recorded, and the recorded fence cannot be read: %v", ErrStale, resource, fence, err)
	}
	return stale(resource, fence, highest)
}

// checkMySQL raises the fence to the greater of the two and then reads it
// back with a locking read, which sees the latest committed row: InnoDB's
// upsert has no condition that would report a refusal.
func (g *Guard) checkMySQL(ctx context.Context, tx *sql.Tx, resource string, fence int64) error {
	if _, err := tx.ExecContext(ctx, g.sql.raise, resource, fence, fence); err != nil {
		return fmt.Errorf("fencing: resource %q: recording fence %d: %w", resource, fence, err)
	}
	var highest int64
	if err := tx.QueryRowContext(ctx, g.sql.read, resource).Scan(&highest); err != nil {
		return fmt.Errorf("fencing: resource %q: reading the recorded fence: %w", resource, err)
	}
	if highest > fence {
		return stale(resource, fence, highest)
	}
	return nil
}

// stale is the refusal of fence, given the fence read back. A recorded
// fence that is not higher cannot have refused it; the write is refused
// all the same, since it was not recorded.
func stale(resource string, fence, highest int64) error {
	if highest <= fence {
		return fmt.Errorf("%w: resource %q: fence %d not recorded, yet the recorded fence is %d", ErrStale, resource, fence, highest)
	}
	return &StaleError{Resource: resource, Fence: fence, Highest: highest}
}

// Highest returns the highest fence recorded for resource, and false if
// none is. Read it in the transaction that checks, or only as a hint: it
// may have grown by the time it returns.
func (g *Guard) Highest(ctx context.Context, q Querier, resource string) (int64, bool, error) {
	if isNil(q) {
		return 0, false, invalid("nil database")
	}
	var highest int64
	err := q.QueryRowContext(ctx, g.sql.peek, resource).Scan(&highest)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("fencing: resource %q: reading the recorded fence: %w", resource, err)
	}
	return highest, true, nil
}

// isNil reports whether q is nil, or one of database/sql's handles as a nil
// pointer.
func isNil(q any) bool {
	switch v := q.(type) {
	case nil:
		return true
	case *sql.DB:
		return v == nil
	case *sql.Tx:
		return v == nil
	case *sql.Conn:
		return v == nil
	}
	return false
}
