package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Do takes key with Lock, runs fn while the lock is held, and releases it
// when fn returns. It returns fn's error. fn finds the lock, and its fence,
// with FromContext(ctx).
//
// While fn runs the lock is extended every ttl/3. If an extension cannot
// reach a quorum before the validity runs out, the lock is lost: fn's ctx is
// cancelled at once with context.Cause(ctx) == ErrLockLost, and Do returns an
// error for which errors.Is(err, ErrLockLost) holds, joined with fn's own.
// fn must stop touching the protected resource when its ctx is done. A
// release that finds the lock already gone also reports ErrLockLost.
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error, opts ...LockOption) (err error) {
	if fn == nil {
		return invalid("nil function")
	}
	ctx, obs := c.begin(ctx, OpDo, key)
	defer obs.end(&err)
	l, err := c.Lock(ctx, key, ttl, append(opts[:len(opts):len(opts)], WithAutoExtend())...)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(context.WithValue(ctx, lockKey{}, l))
	defer cancel(nil)
	stop := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		select {
		case <-l.Done():
			if l.Err() != nil {
				cancel(ErrLockLost)
			}
		case <-stop:
		}
	}()
	fnErr := fn(fctx)
	close(stop)
	<-watching

	// The caller's ctx may be done by now; the release must still happen,
	// and each master's part of it is bounded by the node timeout.
	relErr := l.Release(context.WithoutCancel(ctx))
	if errors.Is(relErr, ErrLockLost) || errors.Is(relErr, ErrLockNotHeld) || errors.Is(l.Err(), ErrLockLost) {
		if fnErr != nil {
			return fmt.Errorf("%w; the function returned: %w", ErrLockLost, fnErr)
		}
		return ErrLockLost
	}
	if relErr != nil {
		c.o.logger.Warn("redlock: release after Do failed; the lock expires with its TTL", "key", key, "err", relErr)
	}
	return fnErr
}

type lockKey struct{}

// FromContext returns the lock that Do holds for the function it called
// with ctx, or false outside such a function. The lock's Fence is what to
// send with writes to the protected resource; its Until is the end of the
// current validity window, moved on by each extension.
func FromContext(ctx context.Context) (*Lock, bool) {
	if ctx == nil {
		return nil, false
	}
	l, ok := ctx.Value(lockKey{}).(*Lock)
	return l, ok && l != nil
}
