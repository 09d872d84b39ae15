package workload

import (
	"context"
	"sync/atomic"

	"github.com/quorumlock/quorumlock/redlock"
)

// Tries is an Observer for the workload's clients: it counts the
// acquisition attempts (redlock.KindAttempt) of each call made with a
// context from WithTries, so that a run can tell a waiter that retries at
// the pace of its backoff and its wake-ups from one that retries as fast as
// the masters answer (check.Pace).
type Tries struct{}

type triesKey struct{}

// WithTries returns ctx with a count of the attempts of the call made with
// it, and the count.
func WithTries(ctx context.Context) (context.Context, *atomic.Int64) {
	n := new(atomic.Int64)
	return context.WithValue(ctx, triesKey{}, n), n
}

// Start keeps ctx: the call's events derive their context from it.
func (Tries) Start(ctx context.Context, _ redlock.Op, _ string) context.Context { return ctx }

// Observe counts an attempt of a call whose context carries a count.
func (Tries) Observe(ctx context.Context, ev redlock.Event) {
	if ev.Kind != redlock.KindAttempt {
		return
	}
	if n, ok := ctx.Value(triesKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}
