package goredis

import (
	"context"
	"sync"
	"time"
)

// grace is how long a call may go on after its caller's deadline, so that a
// reply that comes late is still read and its connection kept.
const grace = time.Second

// within runs do (a subscription's set-up) on a goroutine of its own and
// returns by ctx's deadline or cancellation, whatever the client does.
//
// go-redis bounds a command's reads and writes by the ctx's deadline only
// when the client was built with ContextTimeoutEnabled; otherwise by its
// own ReadTimeout and WriteTimeout (5 s by default), and a stopped master
// would hold the call that long. Where it does use the ctx's deadline, a
// command that runs out of it loses its connection, and with it the
// connection's setup (HELLO, AUTH, CLIENT SETINFO): under load, with a
// node timeout of a few tens of milliseconds, every call then pays for a
// new one and none finishes. So do gets a ctx that is cancelled with ctx
// but whose deadline is grace later: waits for a connection end with the
// caller's, while a command already sent has its late reply read and its
// connection kept.
// discard, if not nil, gets what do returns without error once the caller
// has left (a connection nobody will close otherwise). Close waits for such
// goroutines, each bounded by grace or by the client's own timeouts.
//
// The caller holds an m.inflight count, so that Add here never races with
// Close's Wait.
func within[T any](m *Master, ctx context.Context, do func(context.Context) (T, error), discard func(T)) (T, error) {
	type outcome struct {
		v   T
		err error
	}
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	var (
		mu   sync.Mutex // orders the caller's leaving and do's delivery
		left bool
		done = make(chan outcome, 1)
	)
	dctx, cancel := graceful(ctx)
	m.inflight.Add(1)
	go func() {
		defer m.inflight.Done()
		defer cancel()
		v, err := do(dctx)
		mu.Lock()
		gone := left
		if !gone {
			done <- outcome{v, err}
		}
		mu.Unlock()
		if gone && err == nil && discard != nil {
			discard(v)
		}
	}()
	select {
	case o := <-done:
		return o.v, o.err
	case <-ctx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case o := <-done: // delivered as ctx ended
		return o.v, o.err
	default:
		left = true
		var zero T
		return zero, ctx.Err()
	}
}

// graceful returns the ctx go-redis gets for a call: cancelled with ctx,
// so that nothing waits for a connection once the caller has left, but with
// a deadline grace after ctx's, which is what go-redis sets on the socket
// of a command already sent.
func graceful(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}
	}
	dctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), dl.Add(grace))
	stop := context.AfterFunc(ctx, cancel)
	return dctx, func() { stop(); cancel() }
}
