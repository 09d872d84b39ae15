// Package redlock is a distributed lock over N independent Redis masters:
// the Redlock algorithm, with the parts that make it safe to use.
//
// A Client sends an atomic acquire script (SET key token NX PX ttl, plus the
// fencing counter) to every master at once, each call bounded by the node
// timeout, and counts the yes votes. The lock is held when a quorum (N/2+1
// by default) agreed and time remains after subtracting the time the
// attempt took and a clock-drift reserve; Lock.Until is then the end of the
// validity window. A failed attempt deletes its token, owner-checked, on
// every master it may have reached, including masters that answer late.
//
//	c, err := redlock.NewFromAddrs([]string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"})
//	...
//	err = c.Do(ctx, "invoice:42", 10*time.Second, func(ctx context.Context) error {
//		// ctx is cancelled with cause ErrLockLost if the lock is lost.
//		return charge(ctx, 42)
//	})
//
// On top of the algorithm:
//
//   - Auto-extension (Do, WithAutoExtend) renews the lock every ttl/3 and
//     reports a loss through Lock.Done, Lock.Err and the ctx given to Do's
//     function, before the validity window ends.
//   - Fencing tokens (Lock.Fence) grow with every acquisition of a key, so
//     that the protected resource can refuse a holder that kept writing after
//     its lock was lost.
//   - Reentrancy (WithOwner): an owner that holds a key may take it again.
//   - Resuming (Client.Resume): another process rebuilds a lock's handle
//     from its key and token, with the lock's validity and fence as the
//     masters record them, and extends and releases it.
//   - Waiting in line: Lock holds a place in the key's queue on each master,
//     which grants a free key only to its head, so that callers of every
//     client take turns in the order they came; a release is announced over
//     pub/sub to the head alone. A dead waiter's place ends with its lease
//     (WithQueueLease).
//   - The restart guard: a master that restarted recently, or was replaced
//     by a promoted replica, does not vote, so that a master which lost
//     keys in a crash or a failover cannot hand out a lock a majority
//     believed held. Nor do replicas, masters that may evict keys
//     (WithTrustEviction) and masters whose INFO cannot be read
//     (WithTrustUnreadable).
//
// What the lock cannot promise: a holder paused (GC, swap, SIGSTOP) after
// checking its validity may act after its lock expired; a master whose wall
// clock jumps expires keys early; a request delayed in the network arrives
// late. Fencing tokens, checked by the resource, are the answer to all
// three. See docs/guarantees.md for the full argument.
//
// Errors: ErrNotObtained, ErrLockNotHeld, ErrLockLost, ErrClosed and
// ErrInvalid are matched with errors.Is, and so are ErrHeld, ErrQuarantined
// and ErrMisconfigured, which come inside ErrNotObtained. The error of a
// failed TryLock, Lock, Do, Extend, Release or Resume is one line that leads
// with the cause; errors.As finds its *AttemptError, which lists what each
// master did, and each master's *NodeError.
package redlock

// How the code is laid out (for readers of the source; godoc does not show
// this comment).
//
// Each operation reads top to bottom in a few files, and ends in a Lua
// script under internal/scripts/, whose Go binding sits beside it (keys,
// arguments and the typed reply; lib.lua holds what the scripts share):
//
//   - TryLock: trylock.go (TryLock, and Lock's wait in line) → attempt.go
//     (the rounds, split votes, the fence) → node.go (each master's call,
//     through the driver) → internal/scripts/acquire.go and acquire.lua. The
//     Lock handed back is lock.go; a failed attempt goes on in rollback.go
//     and is explained in failure.go.
//   - Extend: extend.go (the round, and the retake of masters that lost the
//     key) → node.go → internal/scripts/extend.go and extend.lua.
//   - Release: release.go (the round, and the deletes left running) →
//     handover.go (passing the lock to a waiter of this client) → lock.go
//     (the lock's trail: what a delete waits for) → node.go → internal/scripts/release.go and
//     release.lua.
//
// Below node.go is the driver seam (package driver): a driver.Master per
// master, redigo.Redis (package driver/redigo) by default.
//
// The fan-out to the masters is internal/fanout: each master's value, vote
// and error come back together; the client counts each master's part as
// its work, which Close waits for (overNodes in client.go). Beside these:
// client.go (the Client), options.go, errors.go, health.go (the restart guard,
// and what else the lock knows of each master),
// waiters.go and subscriber.go (waiting in line, and hearing releases
// announced), watchdog.go (auto-extension), inspect.go, resume.go, do.go.
