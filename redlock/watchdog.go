package redlock

import (
	"context"
	"errors"
	"time"
)

// watch keeps an auto-extended lock alive. It extends the lock a third of
// the way into each TTL, counted back from Until, and when an extension
// fails it retries until the validity is nearly out. If no extension reached
// a quorum by then, the lock is lost, and that is known before the validity
// window ends, not after.
//
// The plan follows the lock: an Extend that changes the TTL or Until, from
// the caller or from here, re-arms the timer, so a shorter TTL is extended
// on its own schedule. An acquisition that used up much of its TTL is
// extended at once rather than at a fixed tick from when it was handed out.
func (l *Lock) watch() {
	defer close(l.ended)
	clk := l.c.o.clock
	t := clk.NewTimer(l.untilRenewal())
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.done:
			return
		case <-l.c.closing:
			l.lose(ErrClosed)
			return
		case <-l.rearm:
			t.Stop()
			t.Reset(l.untilRenewal())
			continue
		case <-t.C():
		}
		if !l.renew() {
			return
		}
		select {
		case <-l.rearm: // renew's own extension: planned below
		default:
		}
		t.Reset(l.untilRenewal())
	}
}

// untilRenewal is how long until the next extension is due: a third of the
// TTL after the current validity began, which is two thirds of the TTL
// before Until. It is zero when that moment has passed.
func (l *Lock) untilRenewal() time.Duration {
	l.mu.Lock()
	until, ttl := l.until, l.req.ttl
	l.mu.Unlock()
	return max(until.Add(-ttl*2/3).Sub(l.c.o.clock.Now()), 0)
}

// renew extends the lock with its current TTL, retrying within its
// remaining validity. It reports whether the lock is still held.
func (l *Lock) renew() bool {
	c := l.c
	clk := c.o.clock
	for n := 1; ; n++ {
		l.op.Lock()
		if l.checkHeld() != nil {
			l.op.Unlock()
			return false
		}
		ttl, until := l.TTL(), l.Until()
		left := until.Add(-c.nodeTimeout(ttl)).Sub(clk.Now())
		if left <= 0 {
			l.op.Unlock()
			l.lose(errors.New("no extension reached a quorum within the validity"))
			return false
		}
		ctx, cancel := clk.WithTimeout(context.Background(), left)
		began := clk.Now()
		next, err := l.extend(ctx, ttl)
		cancel()
		if err == nil {
			l.moved(next, ttl)
		}
		l.op.Unlock()
		l.observeRenew(n, clk.Since(began), err)
		switch {
		case err == nil:
			c.o.logger.Debug("redlock: lock extended", "key", l.req.key, "ttl", ttl, "attempt", n)
			return true
		case errors.Is(err, errGone):
			l.lose(err)
			return false
		}
		c.o.logger.Debug("redlock: extension failed; retrying within the validity",
			"key", l.req.key, "attempt", n, "err", err)
		// Retry soon, but leave the masters a moment to recover.
		wait := min(max(ttl/30, time.Millisecond), left/4)
		rt := clk.NewTimer(wait)
		select {
		case <-l.stop:
			rt.Stop()
			return false
		case <-c.closing:
			rt.Stop()
			l.lose(ErrClosed)
			return false
		case <-rt.C():
		}
	}
}

// lose records that the lock is lost and says so.
func (l *Lock) lose(cause error) {
	l.mu.Lock()
	wasHeld := l.state == held
	l.mu.Unlock()
	if !wasHeld {
		return
	}
	l.c.o.logger.Warn("redlock: lock lost", "key", l.req.key, "fence", l.fence, "cause", cause)
	l.end(lost, ErrLockLost)
	l.reportLoss(context.Background())
}

// stopWatchdog stops auto-extension and waits until it has stopped.
func (l *Lock) stopWatchdog() {
	if l.stop == nil {
		return
	}
	l.mu.Lock()
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.mu.Unlock()
	<-l.ended
}
