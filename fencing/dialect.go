package fencing

import (
	"fmt"
	"strconv"
	"strings"
)

// Dialect is the SQL a database speaks: its placeholders, its upsert and
// its column types.
type Dialect int

const (
	// PostgreSQL: $n placeholders, INSERT ... ON CONFLICT ... DO UPDATE ...
	// WHERE ... RETURNING. Tested against PostgreSQL 15 at READ COMMITTED.
	PostgreSQL Dialect = iota + 1
	// SQLite: ? placeholders, INSERT ... ON CONFLICT ... DO UPDATE ... WHERE
	// ... RETURNING, which needs SQLite 3.35 or later. Tested through
	// modernc.org/sqlite.
	SQLite
	// MySQL (InnoDB): ? placeholders, INSERT ... ON DUPLICATE KEY UPDATE
	// fence = GREATEST(fence, ?), then SELECT ... FOR UPDATE. Not tested
	// here. Resource names are at most 255 characters (VARCHAR(255)).
	// Update needs the driver to report rows matched rather than rows
	// changed (go-sql-driver/mysql: clientFoundRows=true): otherwise a
	// holder that writes the same values again gets an error.
	MySQL
)

// String returns the dialect's name.
func (d Dialect) String() string {
	switch d {
	case PostgreSQL:
		return "PostgreSQL"
	case SQLite:
		return "SQLite"
	case MySQL:
		return "MySQL"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

func (d Dialect) valid() bool { return d >= PostgreSQL && d <= MySQL }

// statements is the SQL of a guard's table in one dialect. raise takes
// (resource, fence) and, for MySQL, the fence once more.
type statements struct {
	ddl   string
	raise string // PostgreSQL and SQLite: returns the row when it raised, nothing when stale
	read  string // the recorded fence of one resource, locked for MySQL
	peek  string // the recorded fence, without a lock
}

func (d Dialect) statements(table string) statements {
	switch d {
	case PostgreSQL:
		return statements{
			ddl: "CREATE TABLE IF NOT EXISTS " + table + " (resource text PRIMARY KEY, fence bigint NOT NULL CHECK (fence > 0))",
			raise: "INSERT INTO " + table + " AS f (resource, fence) VALUES ($1, $2)" +
				" ON CONFLICT (resource) DO UPDATE SET fence = EXCLUDED.fence WHERE f.fence <= EXCLUDED.fence RETURNING f.fence",
			read: "SELECT fence FROM " + table + " WHERE resource = $1",
			peek: "SELECT fence FROM " + table + " WHERE resource = $1",
		}
	case SQLite:
		return statements{
			ddl: "CREATE TABLE IF NOT EXISTS " + table + " (resource TEXT PRIMARY KEY NOT NULL, fence INTEGER NOT NULL CHECK (fence > 0))",
			raise: "INSERT INTO " + table + " (resource, fence) VALUES (?, ?)" +
				" ON CONFLICT (resource) DO UPDATE SET fence = excluded.fence WHERE fence <= excluded.fence RETURNING fence",
			read: "SELECT fence FROM " + table + " WHERE resource = ?",
			peek: "SELECT fence FROM " + table + " WHERE resource = ?",
		}
	default: // MySQL
		return statements{
			ddl:   "CREATE TABLE IF NOT EXISTS " + table + " (resource VARCHAR(255) NOT NULL PRIMARY KEY, fence BIGINT NOT NULL) ENGINE=InnoDB",
			raise: "INSERT INTO " + table + " (resource, fence) VALUES (?, ?) ON DUPLICATE KEY UPDATE fence = GREATEST(fence, ?)",
			read:  "SELECT fence FROM " + table + " WHERE resource = ? FOR UPDATE",
			peek:  "SELECT fence FROM " + table + " WHERE resource = ?",
		}
	}
}

// params collects a statement's arguments and writes their placeholders.
type params struct {
	d    Dialect
	args []any
}

// add appends v and returns its placeholder.
func (p *params) add(v any) string {
	p.args = append(p.args, v)
	if p.d == PostgreSQL {
		return "$" + strconv.Itoa(len(p.args))
	}
	return "?"
}

// maxIdent keeps <table>_check within PostgreSQL's 63-byte names, which
// it would otherwise truncate without an error.
const maxIdent = 57

// checkIdent accepts a plain SQL identifier, optionally qualified by a
// schema (schema.name): letters, digits and underscores, not starting with
// a digit. Names are written into statements unquoted, so nothing else may
// pass; PostgreSQL folds them to lower case.
func checkIdent(what, name string) error {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return invalid("%s %q: at most one dot (schema.name)", what, name)
	}
	for _, p := range parts {
		if p == "" || len(p) > maxIdent {
			return invalid("%s %q: each part must have 1 to %d characters", what, name, maxIdent)
		}
		for i, r := range p {
			letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
			if !letter && (i == 0 || r < '0' || r > '9') {
				return invalid("%s %q: only letters, digits and underscores, not starting with a digit", what, name)
			}
		}
	}
	return nil
}

// checkFence rejects a fence that no lock hands out.
func checkFence(resource string, fence int64) error {
	if fence <= 0 {
		return invalid("fence %d for resource %q: fences are positive", fence, resource)
	}
	return nil
}

func rowName(table, key string, id any) string {
	return fmt.Sprintf("%s %s=%v", table, key, id)
}
