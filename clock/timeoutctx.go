package clock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// The causes with which a timeoutCtx cancels its inner context itself. They
// tell its own ending from the parent's, and never leave the package: Err
// and context.Cause report DeadlineExceeded or Canceled instead.
var (
	errExpired = errors.New("clock: fake deadline passed")
	errStopped = errors.New("clock: fake context cancelled")
)

// timeoutCtx is the context of Fake.WithTimeout.
//
// A context.WithCancelCause child of the parent (inner) carries Done, so that
// the parent's cancellation reaches it at once, as with the standard
// contexts. That alone is not enough: inner's Err is always Canceled, and
// contexts derived from inner would report Canceled when the fake deadline
// passes. So timeoutCtx hides inner from package context (see Value) until
// the parent ends it. Package context then attaches derived contexts through
// the AfterFunc method, and cancels them with this context's own Err and
// Cause.
type timeoutCtx struct {
	inner    context.Context
	cancel   context.CancelCauseFunc // cancels inner
	values   context.Context         // context.WithoutCancel(parent)
	deadline time.Time
	timer    *fakeTimer

	finishing sync.Mutex // held while finish runs, so every end returns after it
	mu        sync.Mutex
	afters    []*func() // registered by AfterFunc; run once, when done
	ran       bool
}

func newTimeoutCtx(f *Fake, parent context.Context, d time.Duration) (*timeoutCtx, context.CancelFunc) {
	inner, cancel := context.WithCancelCause(parent)
	c := &timeoutCtx{inner: inner, cancel: cancel, values: context.WithoutCancel(parent)}
	c.timer = &fakeTimer{clock: f, fn: func() { c.end(errExpired) }}
	f.mu.Lock()
	due := f.schedule(c.timer, d)
	c.deadline = c.timer.when
	f.mu.Unlock()
	if pd, ok := parent.Deadline(); ok && pd.Before(c.deadline) {
		c.deadline = pd
	}
	switch {
	case due:
		c.end(errExpired)
	case inner.Err() != nil: // the parent is done already
		c.finish()
	default:
		// When the parent ends inner, unpark the timer and tell the derived
		// contexts. This runs on a goroutine of its own, so when the context
		// ends itself, end does that work and this does nothing: Advance and
		// the CancelFunc return only after the derived contexts are done.
		context.AfterFunc(inner, func() {
			if !c.endedItself() {
				c.finish()
			}
		})
	}
	return c, func() { c.end(errStopped) }
}

// end cancels the context with cause, unless it is done already.
func (c *timeoutCtx) end(cause error) {
	c.cancel(cause)
	c.finish()
}

// finish runs once inner is done: it unparks the timer and runs the functions
// registered by AfterFunc. It is safe to call more than once.
func (c *timeoutCtx) finish() {
	c.finishing.Lock()
	defer c.finishing.Unlock()
	c.timer.Stop()
	c.mu.Lock()
	fs := c.afters
	c.afters, c.ran = nil, true
	c.mu.Unlock()
	for _, f := range fs {
		(*f)()
	}
}

// endedItself reports whether inner was cancelled by end rather than by the parent.
func (c *timeoutCtx) endedItself() bool {
	cause := context.Cause(c.inner)
	return cause == errExpired || cause == errStopped
}

func (c *timeoutCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *timeoutCtx) Done() <-chan struct{} { return c.inner.Done() }

func (c *timeoutCtx) Err() error {
	err := c.inner.Err()
	if err == nil {
		return nil
	}
	switch context.Cause(c.inner) {
	case errExpired:
		return context.DeadlineExceeded
	case errStopped:
		return context.Canceled
	}
	return err // the parent's
}

// Value returns the parent's values. The only key that inner resolves and
// WithoutCancel(parent) does not is the one by which package context finds
// the nearest cancellable ancestor, for context.Cause and to attach derived
// contexts. For it, inner is returned only when the parent ended inner, so
// that context.Cause reports the parent's cause; otherwise nil, so that
// context.Cause falls back to Err and derived contexts attach through
// AfterFunc.
func (c *timeoutCtx) Value(key any) any {
	v := c.inner.Value(key)
	if v == nil || c.values.Value(key) != nil {
		return v
	}
	if c.inner.Err() != nil && !c.endedItself() {
		return v
	}
	return nil
}

// AfterFunc arranges for f to run once the context is done; package context
// uses it to cancel derived contexts. f runs on the goroutine that ends the
// context (Advance, or the CancelFunc), so derived contexts are done when
// that returns; a context derived by context.AfterFunc still runs its
// function on a goroutine of its own. stop reports whether it kept f from
// running.
func (c *timeoutCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.ran {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	p := &f
	c.afters = append(c.afters, p)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		i := slices.Index(c.afters, p)
		if i < 0 {
			return false
		}
		c.afters = slices.Delete(c.afters, i, i+1)
		return true
	}
}

func (c *timeoutCtx) String() string {
	return "clock.Fake.WithTimeout(" + c.deadline.String() + ")"
}
