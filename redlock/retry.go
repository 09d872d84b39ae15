package redlock

import (
	"math/rand/v2"
	"time"
)

// Backoff decides how long Lock waits before its next attempt when no
// release announcement wakes it first. Implementations must be safe for
// concurrent use; the ones here are stateless.
type Backoff interface {
	// Delay returns the wait before retry n (n >= 1), or false to give up.
	Delay(n int) (time.Duration, bool)
}

// BackoffFunc adapts a function to Backoff.
type BackoffFunc func(n int) (time.Duration, bool)

// Delay calls f.
func (f BackoffFunc) Delay(n int) (time.Duration, bool) { return f(n) }

// ExponentialBackoff waits a random time in [0, min(max, base*2^(n-1))]:
// exponential growth with full jitter, so that waiters woken together spread out.
// A base or max <= 0 gives no wait.
func ExponentialBackoff(base, max time.Duration) Backoff {
	return BackoffFunc(func(n int) (time.Duration, bool) {
		if base <= 0 || max <= 0 {
			return 0, true
		}
		d := base
		for i := 1; i < n && d < max; i++ {
			d *= 2
		}
		d = min(d, max)
		return rand.N(d + 1), true
	})
}

// ConstantBackoff waits d between attempts.
func ConstantBackoff(d time.Duration) Backoff {
	return BackoffFunc(func(int) (time.Duration, bool) { return max(d, 0), true })
}

// LimitRetry gives up after retries retries of b.
func LimitRetry(b Backoff, retries int) Backoff {
	return BackoffFunc(func(n int) (time.Duration, bool) {
		if n > retries {
			return 0, false
		}
		return b.Delay(n)
	})
}

// NoRetry makes Lock try once, like TryLock.
func NoRetry() Backoff { return LimitRetry(ConstantBackoff(0), 0) }
