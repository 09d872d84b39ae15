// Package workload is what the chaos suite's clients do: contend for one
// key and, while they hold it, do a read-modify-write of a shared set (for
// checker C2) and a fenced write (for checker C3) to a real database,
// through the library's fencing guard. Every attempt, hold and write goes
// into the run's history.
//
// The clients take the lock in one of three ways (Mode): TryLock with a
// backoff of their own; Lock, which waits, with several goroutines per
// client so that the client's local line of waiters is used too; or Do,
// whose function holds the lock for several TTLs while the library extends
// it and stops when the library reports the lock lost.
//
// Procs runs the clients as processes of their own instead, each one
// goroutine looping Lock (ChildMain is their main), and lets a scenario kill
// one with SIGKILL and start it again; the test process still makes the
// critical section's writes and records the history.
//
// A Gate lets a scenario freeze one holder inside its critical section, after
// it checked its validity and before it writes: the process pause that
// Redlock cannot protect against. HoldOff and Resume let a scenario quiesce
// the clients to look at the masters.
package workload
