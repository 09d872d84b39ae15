// Package redlocktest starts in-process Redis-protocol masters for the tests
// of code that takes redlock locks.
//
// Masters(t, 5) starts five masters on free loopback ports and returns a
// ready *redlock.Client over them, and a Group that kills and restarts each
// master, so that a test can check what its code does when a lock is held
// elsewhere, when a minority of masters is down, and when a quorum is lost.
// Everything is stopped when the test ends.
//
// Start starts the same masters without a test, for examples and programs:
// the caller builds its client over Servers.Addrs and stops the masters with
// Servers.Close.
//
// The masters are miniredis servers. What they model of a real master, and
// what they do not:
//
//   - Lock keys expire in real time, as on a real master. A test waits for
//     an expiry as it would against Redis; the client's clock must be the
//     real one (redlock.WithClock with a fake clock does not move them).
//   - A kill closes the master's listener and every connection to it: its
//     clients see connections refused, as after a crash. A restart listens
//     on the same port again, with the keys the master had, as a Redis
//     master with appendonly yes and appendfsync always does after a crash.
//     A master that comes back empty, a failover to a replica, eviction,
//     slow or partitioned networks and clock jumps are not modelled; the
//     chaos suite of this repository covers those against real masters.
//   - They answer INFO without the uptime, run_id and role the client's
//     restart guard reads, so the client is told to trust them unread
//     (redlock.WithTrustUnreadable): a client over real masters must not be.
//   - Release announcements reach waiters over pub/sub, as on Redis, so a
//     Lock waiting for a key returns as soon as its holder releases it.
//   - Scripts run atomically, as on Redis, but a lock costs far more time
//     than on Redis: these masters are for checking behaviour, not speed.
package redlocktest
