package fencing_test

import (
	"context"
	"fmt"
	"log"

	"github.com/quorumlock/quorumlock/fencing"
)

// The table of recorded fences, in SQLite. CreateTable runs it; the
// sqltest module's example runs the whole story with a driver.
func ExampleGuard_DDL() {
	guard, err := fencing.New(fencing.SQLite)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(guard.DDL())
	// Output:
	// CREATE TABLE IF NOT EXISTS quorumlock_fences (resource TEXT PRIMARY KEY NOT NULL, fence INTEGER NOT NULL CHECK (fence > 0))
}

// The conditional UPDATE of a row that carries its own fence column, for
// a holder with fence 1838337922308190.
func ExampleGuard_UpdateStatement() {
	guard, err := fencing.New(fencing.PostgreSQL)
	if err != nil {
		log.Fatal(err)
	}
	row := fencing.Row{Table: "accounts", Key: "id", ID: 42, Fence: "fence"}
	query, args, err := guard.UpdateStatement(row, 1838337922308190, fencing.Set{Column: "balance", Value: 100})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(query)
	fmt.Println(args...)
	// Output:
	// UPDATE accounts SET balance = $1, fence = $2 WHERE id = $3 AND COALESCE(fence, 0) <= $4
	// 100 1838337922308190 42 1838337922308190
}

// Bad input is an error, never a panic.
func ExampleGuard_Check_invalid() {
	guard, err := fencing.New(fencing.PostgreSQL)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(guard.Check(context.Background(), nil, "ledger:1", 7))
	// Output:
	// fencing: invalid argument: nil transaction: the check must run in the transaction of the writes it guards
}
