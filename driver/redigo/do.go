package redigo

import (
	"context"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Do runs one command on the master and returns its reply in the neutral
// form of driver.Master's Eval: an integer as int64, a bulk or status string
// as string, an array as []any, a nil reply as nil. An error reply is
// returned as the error, a driver.Error. Pipelined, the command shares the
// connection with Eval's calls; pooled, it takes a pooled connection. It
// returns within ctx's deadline, or the read timeout when ctx has none.
// Unlike Eval it never sends a command twice.
func (r *Redis) Do(ctx context.Context, cmd string, args ...string) (any, error) {
	if _, ok := ctx.Deadline(); !ok && r.readTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.readTimeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.pl == nil {
		return r.doPooled(ctx, cmd, args)
	}
	deadline, _ := ctx.Deadline()
	for range maxPipeTries {
		p, _, err := r.pl.get(ctx)
		if err != nil {
			return nil, err
		}
		q := r.pl.request()
		q.want = 1
		q.buf = appendArray(q.buf, 1+len(args))
		q.buf = appendBulk(q.buf, cmd)
		for _, a := range args {
			q.buf = appendBulk(q.buf, a)
		}
		vals, err := r.pl.roundTrip(ctx, p, q, deadline)
		if err == errNotSent {
			continue
		}
		if err != nil {
			return nil, err
		}
		v := vals[0]
		r.pl.recycle(q)
		return replyOrError(v)
	}
	return nil, errNotSent
}

func (r *Redis) doPooled(ctx context.Context, cmd string, args []string) (any, error) {
	conn, err := r.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		if timeout = time.Until(dl); timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
	}
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	v, err := redis.DoWithTimeout(conn, timeout, cmd, a...)
	if err != nil {
		return nil, serverError(err)
	}
	return replyOrError(neutral(v))
}
