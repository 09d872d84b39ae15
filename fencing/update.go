package fencing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Row is a row that carries its own fence (or version) column, for Update:
// the optimistic check without a table of fences.
type Row struct {
	Table string // the row's table
	Key   string // the column that picks the row, usually its primary key
	ID    any    // the key's value
	// Fence is the column that holds the fence of the row's last write.
	// Declare it BIGINT NOT NULL DEFAULT 0; a NULL counts as 0, a row no
	// fenced writer has written yet.
	Fence string
}

// Set is one column an Update writes, and its new value.
type Set struct {
	// Column is the column to write: a plain identifier, neither the
	// row's key column nor its fence column.
	Column string
	// Value is the column's new value, passed to the driver as an argument.
	Value any
}

// UpdateStatement builds the conditional UPDATE for row: it writes sets and
// fence, if the row's fence is at most fence. In PostgreSQL, for
// Row{Table: "accounts", Key: "id", ID: 42, Fence: "fence"} and one Set of
// balance:
//
//	UPDATE accounts SET balance = $1, fence = $2 WHERE id = $3 AND COALESCE(fence, 0) <= $4
//
// with the arguments (balance, fence, 42, fence). The same holder may write
// again; an older one changes nothing. Run it yourself (and treat 0 rows
// affected as a refusal), or let Update run it.
func (g *Guard) UpdateStatement(row Row, fence int64, sets ...Set) (string, []any, error) {
	if err := checkRow(row, sets); err != nil {
		return "", nil, err
	}
	if err := checkFence(rowName(row.Table, row.Key, row.ID), fence); err != nil {
		return "", nil, err
	}
	p := &params{d: g.dialect}
	var b strings.Builder
	b.WriteString("UPDATE " + row.Table + " SET ")
	for _, s := range sets {
		b.WriteString(s.Column + " = " + p.add(s.Value) + ", ")
	}
	b.WriteString(row.Fence + " = " + p.add(fence))
	b.WriteString(" WHERE " + row.Key + " = " + p.add(row.ID))
	b.WriteString(" AND COALESCE(" + row.Fence + ", 0) <= " + p.add(fence))
	return b.String(), p.args, nil
}

// Update runs UpdateStatement's UPDATE on q and checks that it changed the
// row. If it changed none, Update reads the row's fence and returns a
// *StaleError (errors.Is(err, ErrStale)) when it is higher than fence, or
// ErrNotFound when there is no such row: never nil.
//
// One UPDATE is atomic on its own, so q may be a *sql.DB; in a transaction
// the refusal's read sees the row as the transaction does. At PostgreSQL's
// READ COMMITTED an UPDATE that waited for a concurrent writer of the row
// re-checks its condition against the row that writer committed.
func (g *Guard) Update(ctx context.Context, q Querier, row Row, fence int64, sets ...Set) error {
	if isNil(q) {
		return invalid("nil database")
	}
	query, args, err := g.UpdateStatement(row, fence, sets...)
	if err != nil {
		return err
	}
	name := rowName(row.Table, row.Key, row.ID)
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("fencing: %s: update with fence %d: %w", name, fence, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("fencing: %s: update with fence %d: rows affected: %w", name, fence, err)
	}
	if n > 0 {
		return nil
	}
	p := &params{d: g.dialect}
	read := "SELECT " + row.Fence + " FROM " + row.Table + " WHERE " + row.Key + " = " + p.add(row.ID)
	var highest sql.NullInt64
	err = q.QueryRowContext(ctx, read, p.args...).Scan(&highest)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: %s", ErrNotFound, name)
	case err != nil:
		return fmt.Errorf("%w: %s: fence %d not written, and the row's fence cannot be read: %v", ErrStale, name, fence, err)
	}
	if highest.Int64 <= fence {
		// Only a driver that reports rows changed rather than rows
		// matched (MySQL's default) gets here, when the values were
		// already there; still, nothing proves the write landed.
		return fmt.Errorf("%w: %s: no row changed by fence %d, though the row's fence is %d (MySQL: set clientFoundRows=true)", ErrStale, name, fence, highest.Int64)
	}
	return &StaleError{Resource: name, Fence: fence, Highest: highest.Int64}
}

// checkRow rejects names that are not plain identifiers, a missing key
// value, and sets that write the key or the fence or a column twice.
func checkRow(row Row, sets []Set) error {
	if err := checkIdent("table", row.Table); err != nil {
		return err
	}
	for _, c := range []struct{ what, name string }{{"key column", row.Key}, {"fence column", row.Fence}} {
		if err := checkIdent(c.what, c.name); err != nil {
			return err
		}
		if strings.Contains(c.name, ".") {
			return invalid("%s %q: a column name has no dot", c.what, c.name)
		}
	}
	if row.Key == row.Fence {
		return invalid("key column and fence column are both %q", row.Key)
	}
	if isNil(row.ID) {
		return invalid("no key value for %s.%s", row.Table, row.Key)
	}
	seen := map[string]bool{}
	for _, s := range sets {
		if err := checkIdent("column", s.Column); err != nil {
			return err
		}
		low := strings.ToLower(s.Column)
		switch {
		case strings.Contains(s.Column, "."):
			return invalid("column %q: a column name has no dot", s.Column)
		case low == strings.ToLower(row.Fence):
			return invalid("column %q is the fence column: Update writes it", s.Column)
		case low == strings.ToLower(row.Key):
			return invalid("column %q is the key column", s.Column)
		case seen[low]:
			return invalid("column %q set twice", s.Column)
		}
		seen[low] = true
	}
	return nil
}
