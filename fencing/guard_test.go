package fencing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The statements run against real PostgreSQL and SQLite in the sqltest
// module; these tests pin their text, MySQL's included, and the input checks
// that come before any statement.

func TestNew_RejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		d    Dialect
		opts []Option
	}{
		{name: "zero dialect", d: 0},
		{name: "unknown dialect", d: 99},
		{name: "empty table", d: PostgreSQL, opts: []Option{WithTable("")}},
		{name: "table with a space", d: PostgreSQL, opts: []Option{WithTable("my fences")}},
		{name: "table with a quote", d: SQLite, opts: []Option{WithTable(`f"; DROP TABLE x; --`)}},
		{name: "table starting with a digit", d: MySQL, opts: []Option{WithTable("1fences")}},
		{name: "two dots", d: PostgreSQL, opts: []Option{WithTable("a.b.c")}},
		{name: "empty schema", d: PostgreSQL, opts: []Option{WithTable(".fences")}},
		{name: "name too long for <table>_check", d: PostgreSQL, opts: []Option{WithTable(strings.Repeat("f", 58))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := New(tt.d, tt.opts...)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.Nil(t, g)
		})
	}
}

func TestNew_Table(t *testing.T) {
	tests := []struct {
		opts []Option
		want string
	}{
		{want: "quorumlock_fences"},
		{opts: []Option{nil}, want: "quorumlock_fences"},
		{opts: []Option{WithTable("app.Fences_2")}, want: "app.Fences_2"},
	}
	for _, tt := range tests {
		g, err := New(PostgreSQL, tt.opts...)
		require.NoError(t, err)
		assert.Equal(t, tt.want, g.Table())
		assert.Equal(t, tt.want+"_check", g.Function())
		assert.Equal(t, PostgreSQL, g.Dialect())
	}
}

func TestDialect_Statements(t *testing.T) {
	tests := []struct {
		d    Dialect
		want statements
	}{
		{PostgreSQL, statements{
			ddl:   "CREATE TABLE IF NOT EXISTS t (resource text PRIMARY KEY, fence bigint NOT NULL CHECK (fence > 0))",
			raise: "INSERT INTO t AS f (resource, fence) VALUES ($1, $2) ON CONFLICT (resource) DO UPDATE SET fence = EXCLUDED.fence WHERE f.fence <= EXCLUDED.fence RETURNING f.fence",
			read:  "SELECT fence FROM t WHERE resource = $1",
			peek:  "SELECT fence FROM t WHERE resource = $1",
		}},
		{SQLite, statements{
			ddl:   "CREATE TABLE IF NOT EXISTS t (resource TEXT PRIMARY KEY NOT NULL, fence INTEGER NOT NULL CHECK (fence > 0))",
			raise: "INSERT INTO t (resource, fence) VALUES (?, ?) ON CONFLICT (resource) DO UPDATE SET fence = excluded.fence WHERE fence <= excluded.fence RETURNING fence",
			read:  "SELECT fence FROM t WHERE resource = ?",
			peek:  "SELECT fence FROM t WHERE resource = ?",
		}},
		{MySQL, statements{
			ddl:   "CREATE TABLE IF NOT EXISTS t (resource VARCHAR(255) NOT NULL PRIMARY KEY, fence BIGINT NOT NULL) ENGINE=InnoDB",
			raise: "INSERT INTO t (resource, fence) VALUES (?, ?) ON DUPLICATE KEY UPDATE fence = GREATEST(fence, ?)",
			read:  "SELECT fence FROM t WHERE resource = ? FOR UPDATE",
			peek:  "SELECT fence FROM t WHERE resource = ?",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.d.String(), func(t *testing.T) {
			g, err := New(tt.d, WithTable("t"))
			require.NoError(t, err)
			assert.Equal(t, tt.want, g.sql)
			assert.Equal(t, tt.want.ddl, g.DDL())
		})
	}
}

func TestCheck_RejectsBadInputBeforeTouchingTheDatabase(t *testing.T) {
	// Without a transaction, every other argument is checked too; the
	// sqltest module checks each one with a real transaction.
	g, err := New(SQLite)
	require.NoError(t, err)
	for _, fence := range []int64{1, 0, -1} {
		for _, res := range []string{"r", ""} {
			err := g.Check(context.Background(), nil, res, fence)
			assert.ErrorIs(t, err, ErrInvalid, "resource %q, fence %d", res, fence)
		}
	}
}

func TestStaleError(t *testing.T) {
	var err error = &StaleError{Resource: "ledger", Fence: 5, Highest: 7}
	wrapped := fmt.Errorf("commit: %w", err)
	assert.ErrorIs(t, wrapped, ErrStale)
	assert.NotErrorIs(t, wrapped, ErrInvalid)
	var se *StaleError
	require.ErrorAs(t, wrapped, &se)
	assert.Equal(t, int64(5), se.Fence)
	assert.Equal(t, int64(7), se.Highest)
	assert.Equal(t, `fencing: stale fence: resource "ledger": fence 5 is older than 7, already recorded`, err.Error())

	// A read-back that cannot have refused the fence still refuses it.
	assert.ErrorIs(t, stale("r", 5, 5), ErrStale)
	assert.False(t, errors.As(stale("r", 5, 5), &se))
}

func TestUpdateStatement(t *testing.T) {
	row := Row{Table: "accounts", Key: "id", ID: 42, Fence: "fence"}
	tests := []struct {
		d     Dialect
		sets  []Set
		query string
		args  []any
	}{
		{PostgreSQL, []Set{{"balance", 100}, {"note", "x"}},
			"UPDATE accounts SET balance = $1, note = $2, fence = $3 WHERE id = $4 AND COALESCE(fence, 0) <= $5",
			[]any{100, "x", int64(7), 42, int64(7)}},
		{PostgreSQL, nil,
			"UPDATE accounts SET fence = $1 WHERE id = $2 AND COALESCE(fence, 0) <= $3",
			[]any{int64(7), 42, int64(7)}},
		{SQLite, []Set{{"balance", 100}},
			"UPDATE accounts SET balance = ?, fence = ? WHERE id = ? AND COALESCE(fence, 0) <= ?",
			[]any{100, int64(7), 42, int64(7)}},
		{MySQL, []Set{{"balance", 100}},
			"UPDATE accounts SET balance = ?, fence = ? WHERE id = ? AND COALESCE(fence, 0) <= ?",
			[]any{100, int64(7), 42, int64(7)}},
	}
	for _, tt := range tests {
		t.Run(tt.d.String(), func(t *testing.T) {
			g, err := New(tt.d)
			require.NoError(t, err)
			q, args, err := g.UpdateStatement(row, 7, tt.sets...)
			require.NoError(t, err)
			assert.Equal(t, tt.query, q)
			assert.Equal(t, tt.args, args)
		})
	}
}

func TestUpdateStatement_RejectsBadInput(t *testing.T) {
	ok := Row{Table: "accounts", Key: "id", ID: 42, Fence: "fence"}
	with := func(f func(*Row)) Row { r := ok; f(&r); return r }
	tests := []struct {
		name  string
		row   Row
		fence int64
		sets  []Set
	}{
		{name: "zero fence", row: ok, fence: 0},
		{name: "negative fence", row: ok, fence: -1},
		{name: "bad table", row: with(func(r *Row) { r.Table = "a;b" }), fence: 1},
		{name: "empty key", row: with(func(r *Row) { r.Key = "" }), fence: 1},
		{name: "qualified key", row: with(func(r *Row) { r.Key = "accounts.id" }), fence: 1},
		{name: "bad fence column", row: with(func(r *Row) { r.Fence = "fence--" }), fence: 1},
		{name: "key is the fence", row: with(func(r *Row) { r.Fence = "id" }), fence: 1},
		{name: "no key value", row: with(func(r *Row) { r.ID = nil }), fence: 1},
		{name: "set writes the fence", row: ok, fence: 1, sets: []Set{{"FENCE", 3}}},
		{name: "set writes the key", row: ok, fence: 1, sets: []Set{{"id", 3}}},
		{name: "set twice", row: ok, fence: 1, sets: []Set{{"a", 1}, {"A", 2}}},
		{name: "bad set column", row: ok, fence: 1, sets: []Set{{"a = 1, b", 1}}},
	}
	g, err := New(PostgreSQL)
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := g.UpdateStatement(tt.row, tt.fence, tt.sets...)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.ErrorIs(t, g.Update(context.Background(), nil, tt.row, tt.fence, tt.sets...), ErrInvalid)
		})
	}
}

func TestFunctionDDL_PostgreSQLOnly(t *testing.T) {
	for _, d := range []Dialect{SQLite, MySQL} {
		g, err := New(d)
		require.NoError(t, err)
		_, err = g.FunctionDDL()
		assert.ErrorIs(t, err, ErrInvalid, d.String())
		assert.ErrorIs(t, g.InstallFunction(context.Background(), nil), ErrInvalid, d.String())
	}
	g, err := New(PostgreSQL, WithTable("app.fences"))
	require.NoError(t, err)
	ddl, err := g.FunctionDDL()
	require.NoError(t, err)
	assert.Contains(t, ddl, "CREATE OR REPLACE FUNCTION app.fences_check(p_resource text, p_fence bigint) RETURNS bigint")
	assert.Contains(t, ddl, "INSERT INTO app.fences AS f")
	assert.Contains(t, ddl, "USING ERRCODE = 'QF001'")
	assert.NotContains(t, ddl, "%!", "a formatting verb left unfilled")
}

func TestCreateTable_NilDatabase(t *testing.T) {
	g, err := New(PostgreSQL)
	require.NoError(t, err)
	assert.ErrorIs(t, g.CreateTable(context.Background(), nil), ErrInvalid)
	_, _, err = g.Highest(context.Background(), nil, "r")
	assert.ErrorIs(t, err, ErrInvalid)
}
