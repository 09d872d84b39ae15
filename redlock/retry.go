package redlock

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff decides how long Lock waits before its next attempt when no
// release announcement wakes it first. Implementations must be safe for
// concurrent use and must take any n >= 1: Lock counts a retry on every
// wake, so n can grow large on a busy key. ExponentialBackoff and
// ConstantBackoff meet both needs, and so does LimitRetry of a Backoff that
// does.
type Backoff interface {
	// Delay returns the wait before retry n (n >= 1), or false to give up.
	// A negative wait counts as none.
	Delay(n int) (time.Duration, bool)
}

// BackoffFunc adapts a function to Backoff. A nil BackoffFunc is refused by
// WithRetry.
type BackoffFunc func(n int) (time.Duration, bool)

// Delay calls f.
func (f BackoffFunc) Delay(n int) (time.Duration, bool) { return f(n) }

// ExponentialBackoff waits a random time in [0, min(max, base*2^(n-1))]:
// exponential growth with full jitter, so that waiters woken together spread out.
// A base or max <= 0 gives no wait.
func ExponentialBackoff(base, max time.Duration) Backoff { return exponential{base, max} }

// The Backoffs built here are stateless values, which is what makes one
// safe to share between goroutines, and each saturates rather than
// overflows as n grows: exponential stops doubling at max, constant ignores
// n, and limited only compares it before asking the Backoff it wraps.
type exponential struct{ base, max time.Duration }

func (e exponential) Delay(n int) (time.Duration, bool) {
	if e.base <= 0 || e.max <= 0 {
		return 0, true
	}
	d := min(e.base, e.max)
	for i := 1; i < n && d < e.max; i++ {
		if d > e.max/2 {
			d = e.max // doubling would pass max, or overflow
			break
		}
		d *= 2
	}
	return jitter(d), true
}

// jitter returns a random duration in [0, d].
func jitter(d time.Duration) time.Duration {
	if d == math.MaxInt64 {
		return rand.N(d) // d+1 would overflow; [0, d) is as good
	}
	return rand.N(d + 1)
}

// ConstantBackoff waits d between attempts.
func ConstantBackoff(d time.Duration) Backoff { return constant(max(d, 0)) }

type constant time.Duration

func (c constant) Delay(int) (time.Duration, bool) { return time.Duration(c), true }

// LimitRetry gives up after retries retries of b. A nil b is refused by
// WithRetry.
func LimitRetry(b Backoff, retries int) Backoff { return limited{b, retries} }

type limited struct {
	b       Backoff
	retries int
}

func (l limited) Delay(n int) (time.Duration, bool) {
	if n > l.retries || l.b == nil {
		return 0, false
	}
	return l.b.Delay(n)
}

// NoRetry makes Lock try once, like TryLock.
func NoRetry() Backoff { return LimitRetry(ConstantBackoff(0), 0) }

// checkBackoff refuses a backoff that would fail when Lock calls it.
func checkBackoff(b Backoff) error {
	switch b := b.(type) {
	case nil:
		return invalid("nil retry strategy")
	case BackoffFunc:
		if b == nil {
			return invalid("nil BackoffFunc as retry strategy")
		}
	case limited:
		if b.b == nil {
			return invalid("LimitRetry of a nil retry strategy")
		}
		return checkBackoff(b.b)
	}
	return nil
}

// splitDelay returns the wait after the splits-th split vote in a row
// (splits >= 1): a random time within first, so that contenders that split
// the masters retry soon but apart, in a window that doubles with each
// split in a row, up to limit, the wait that the split cut short. A split
// that persists is not contenders that each took a few masters: a
// semaphore's holders, each on its own quorum, refuse a waiter on fewer
// masters than a quorum and leave it a free permit on the others, and so
// does a holder whose masters lost its key. Retrying within first again
// and again, the waiter would take and roll back those permits as fast as
// the masters answer. Once the window reaches limit, the wait is limit
// itself, and never less than the first split's.
func splitDelay(first time.Duration, splits int, limit time.Duration) time.Duration {
	window := first
	for i := 1; i < splits && window < limit; i++ {
		window *= 2
	}
	if window >= limit && splits > 1 {
		return max(limit, rand.N(first))
	}
	return rand.N(window)
}
