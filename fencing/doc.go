// Package fencing is the resource's half of a fenced lock, for SQL
// databases: it makes a holder whose lock expired harmless by refusing its
// writes once a newer holder has written.
//
// A lock alone cannot stop a holder that was paused (GC, swap, SIGSTOP)
// after it checked its lock and before it wrote: it wakes up and writes,
// though another holder has had the lock since. Only the resource can tell,
// by comparing the writer's fence (redlock's Lock.Fence, which grows with
// every acquisition of a key) with the highest it has already recorded.
// Guard.Check does that inside the writer's own transaction:
//
//	tx, err := db.BeginTx(ctx, nil)
//	...
//	if err := guard.Check(ctx, tx, "ledger:42", lock.Fence()); err != nil {
//		tx.Rollback() // errors.Is(err, fencing.ErrStale): a newer holder has written
//		return err
//	}
//	// ... the writes the lock protects, in tx ...
//	return tx.Commit()
//
// Check records the fence in a small table, one row per resource (see
// Guard.DDL and Guard.CreateTable), with an upsert that raises the row's
// fence only if the new one is at least as high. The upsert locks the row
// until the transaction ends, so the guarded transactions of one resource
// run one at a time, in fence order: an older holder's transaction either
// waits behind a newer one and then fails with ErrStale, or fails at once.
// A fence equal to the recorded one passes (the same holder writing again).
// A transaction that rolls back leaves the recorded fence as it was.
//
// Three rules make it hold:
//   - Every writer of the resource goes through Check, in the same
//     transaction as its writes, and commits only if Check returned nil.
//   - Check comes first in the transaction, before the writes and reads it
//     guards: the fence row is then the first lock the transaction takes, so
//     two guarded transactions cannot deadlock on the rows they write, and
//     on SQLite the transaction takes the write lock at once instead of
//     upgrading a read lock, which SQLite refuses with SQLITE_BUSY.
//   - The isolation level is the database's default, or stricter:
//     PostgreSQL READ COMMITTED, SQLite's serializable transactions,
//     MySQL/InnoDB REPEATABLE READ. What Check needs is that a write to a
//     row waits for a concurrent writer of that row and then either sees
//     its committed value or fails. At READ COMMITTED, PostgreSQL re-checks
//     the upsert's condition against the row as the other transaction
//     committed it, so the older holder gets ErrStale; at REPEATABLE READ
//     or SERIALIZABLE it gets a serialization failure (SQLSTATE 40001)
//     instead. That is just as safe, but a newer holder can get it too,
//     when an older transaction commits after the newer one began: retry
//     it. SQLite runs one writer at a time; open it with a busy timeout
//     (PRAGMA busy_timeout) so that a second writer waits rather than
//     failing at once with SQLITE_BUSY. InnoDB's upsert and the guard's
//     SELECT ... FOR UPDATE are locking reads, which see the latest
//     committed row whatever the snapshot.
//
// Rows that carry their own fence or version column need no table: the
// classic optimistic check, UPDATE ... SET fence = $new WHERE id = $id AND
// fence <= $new, is Guard.Update (and Guard.UpdateStatement builds it). It
// reports an UPDATE that changed no row as ErrStale, never as success.
//
// Scripts check the same way in SQL. On PostgreSQL, Guard.InstallFunction
// installs a function, <table>_check(resource, fence), that raises the
// fence or raises an error with SQLSTATE StaleSQLState, so that a psql
// script run by `redlock run` (which exports REDLOCK_FENCE) can call it in
// its own transaction.
//
// The package imports only database/sql: the database driver is the
// application's. It is tested against PostgreSQL 15 (pgx's database/sql
// driver) and SQLite (modernc.org/sqlite). The MySQL dialect is written to
// the MySQL 8 documentation but not tested here.
package fencing
