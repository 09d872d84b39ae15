package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// Held is a lock a contender obtained.
type Held interface {
	Release(ctx context.Context) error
}

// Locker is a contender: one attempt to take a key for the contender's TTL.
type Locker interface {
	// TryLock makes one attempt. A refusal is an error.
	TryLock(ctx context.Context, key string) (Held, error)
	// Close releases the contender's connections and waits for its
	// background work.
	Close() error
}

// Waiter is a contender that can wait for a held key.
type Waiter interface {
	// Lock returns once it holds key, or with an error once ctx is done.
	Lock(ctx context.Context, key string) (Held, error)
}

// Drift is the clock-drift reserve every contender here takes from a TTL:
// the same factor as redsync's and quorumlock's defaults, plus quorumlock's
// 2 ms margin.
func Drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*0.01) + 2*time.Millisecond
}

// newToken returns 128 random bits as 32 hex digits, as quorumlock's tokens.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
