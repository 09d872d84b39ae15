// Package sqltest starts the real databases that the fencing guard is
// tested against, and that the chaos suite's fenced store runs on: a
// throwaway PostgreSQL server of the host's Debian postgresql package,
// and SQLite files through a pure-Go driver (modernc.org/sqlite, no cgo).
//
// It is a module of its own, so that the database drivers it needs never
// reach the users of the lock: the library's fencing package imports only
// database/sql. Its tests are the guard's: the contract on both databases,
// the stale holder with real redis-server masters, concurrent writers, the
// SQL function and `redlock run` calling it through psql.
//
// A missing PostgreSQL fails the test that asked for it; nothing skips.
package sqltest
