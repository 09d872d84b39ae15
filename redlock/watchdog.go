package redlock

import (
	"context"
	"errors"
	"time"
)

// watch keeps an auto-extended lock alive: it extends every ttl/3 and, when
// an extension fails, retries until the validity is nearly out. If no
// extension reached a quorum by then, the lock is lost, and that is known
// before the validity window ends, not after.
func (l *Lock) watch() {
	defer l.c.bg.Done()
	defer close(l.ended)
	clk := l.c.o.clock
	t := clk.NewTimer(l.TTL() / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.c.closing:
			l.lose(ErrClosed)
			return
		case <-t.C():
		}
		if !l.renew() {
			return
		}
		t.Reset(l.TTL() / 3)
	}
}

// renew extends the lock, retrying within its remaining validity. It reports
// whether the lock is still held.
func (l *Lock) renew() bool {
	c := l.c
	clk := c.o.clock
	for n := 1; ; n++ {
		ttl := l.TTL()
		guard := c.nodeTimeout(ttl)
		left := l.Until().Add(-guard).Sub(clk.Now())
		if left <= 0 {
			l.lose(errors.New("no extension reached a quorum within the validity"))
			return false
		}
		ctx, cancel := clk.WithTimeout(context.Background(), left)
		l.op.Lock()
		if l.usable() != nil {
			l.op.Unlock()
			cancel()
			return false
		}
		until, err := l.extend(ctx, ttl)
		if err == nil {
			l.mu.Lock()
			l.until = until
			l.mu.Unlock()
		}
		l.op.Unlock()
		cancel()
		switch {
		case err == nil:
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
