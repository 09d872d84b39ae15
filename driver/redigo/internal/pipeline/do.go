package pipeline

import (
	"context"

	"github.com/quorumlock/quorumlock/driver"
)

// bound gives ctx the read timeout as its deadline when it has none.
func (pl *Pipeline) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); !ok && pl.read > 0 {
		return context.WithTimeout(ctx, pl.read)
	}
	return ctx, func() {}
}

// Do runs one command and returns its reply in the neutral form of
// driver.Master's Eval; an error reply is returned as the error, a
// driver.Error. It returns within ctx's deadline, or the read timeout when
// ctx has none. Unlike Eval it never sends a command twice.
func (pl *Pipeline) Do(ctx context.Context, words ...string) (any, error) {
	ctx, cancel := pl.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	for range maxPipeTries {
		p, _, err := pl.get(ctx)
		if err != nil {
			return nil, err
		}
		q := pl.request()
		q.want = 1
		q.buf = appendCommand(q.buf, words)
		vals, err := pl.roundTrip(ctx, p, q, deadline)
		if err == errNotSent {
			continue
		}
		if err != nil {
			return nil, err
		}
		v := vals[0]
		pl.recycle(q)
		return replyOrError(v)
	}
	return nil, errNotSent
}

// EvalAsking runs call on a node importing the call's slot from another
// (a Redis Cluster's ASK): the check's questions when due, then ASKING,
// then the script by its source, as the node may not have it cached and
// ASKING holds for one command only. A migration is short and rare, so a
// call whose connection turns out dead is not sent again.
func (pl *Pipeline) EvalAsking(ctx context.Context, call driver.Call) (driver.Reply, error) {
	return pl.eval(ctx, call, true)
}
