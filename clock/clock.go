package clock

import (
	"context"
	"time"
)

// Clock is the source of time for the lock algorithm.
//
// Elapsed time must come from Since, which uses the monotonic clock, so that a
// wall-clock step on the client never changes how much validity a lock has left.
type Clock interface {
	// Now returns the current time, with a monotonic reading.
	Now() time.Time
	// Since returns the time elapsed since t, measured on the monotonic clock.
	Since(t time.Time) time.Duration
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
	// WithTimeout returns a copy of parent that is cancelled after d on this clock.
	WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc)
}

// Timer is the part of *time.Timer that the lock algorithm uses.
type Timer interface {
	// C returns the channel on which the timer delivers its time.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether it stopped it.
	Stop() bool
	// Reset changes the timer to fire after d. It reports whether the timer was active.
	Reset(d time.Duration) bool
}

// Real returns the clock of the running process.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) Since(t time.Time) time.Duration { return time.Since(t) }
func (realClock) NewTimer(d time.Duration) Timer  { return realTimer{time.NewTimer(d)} }
func (realClock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }
