package quorumlock

import (
	"math"
	"time"
)

// Drift is the share of a lock's TTL held back for clock drift between the
// masters and the client.
//
// Redis expires keys by each master's own clock, so a master whose clock runs
// fast frees a key early. The reserve is Factor*ttl + Margin; Margin also covers
// Redis's one-millisecond expiry granularity.
type Drift struct {
	Factor float64       // share of the TTL, in [0, 1)
	Margin time.Duration // fixed reserve, >= 0
}

// Reserve returns the time held back for drift on a lock of the given TTL:
// ttl*Factor + Margin, saturating instead of overflowing.
func (d Drift) Reserve(ttl time.Duration) time.Duration {
	f := float64(ttl) * d.Factor
	if math.IsNaN(f) || f < 0 {
		f = 0
	}
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return addSat(time.Duration(f), d.Margin)
}

// Validity returns how long a lock stays valid after an acquisition that took
// elapsed: ttl - elapsed - (ttl*Factor + Margin).
//
// A result <= 0 means the lock must not be used: the keys may already be
// expiring on some master. The arithmetic saturates, so no input overflows.
func Validity(ttl, elapsed time.Duration, drift Drift) time.Duration {
	return subSat(subSat(ttl, elapsed), drift.Reserve(ttl))
}

func addSat(a, b time.Duration) time.Duration {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

func subSat(a, b time.Duration) time.Duration {
	if b == math.MinInt64 {
		if a >= 0 {
			return math.MaxInt64
		}
		return a - b
	}
	return addSat(a, -b)
}
