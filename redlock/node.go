package redlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/pool"
)

// request names one lock operation on one master.
type request struct {
	key, token, owner string
	ttl               time.Duration // for acquire and extend
	keep              time.Duration // how long the fencing counter outlives the lock
	rollback          bool          // a release that undoes a failed attempt: no announcement, a tombstone
	tombstone         bool          // a release that leaves the token's tombstone
	from              string        // an acquire that takes the key over from this plain lock's token
	argv              *argvCache    // the script arguments, built once for all masters
}

// argvCache holds the argument vector of one fan-out's script call, built
// by the first master to need it and shared, read-only, by the others. Each
// fan-out takes a request of its own, with a fresh cache: see withArgv.
type argvCache struct {
	mu     sync.Mutex
	script *script
	argv   []any
}

// withArgv returns a copy of r with an empty argument cache, for one fan-out.
func (r request) withArgv() request {
	r.argv = &argvCache{}
	return r
}

func (a *argvCache) get(s *script, build func() []any) []any {
	if a == nil {
		return s.argv(build()...)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.script != s {
		a.script, a.argv = s, s.argv(build()...)
	}
	return a.argv
}

// grant is one master's answer to an acquire.
type grant struct {
	ok      bool
	counter int64         // the key's fencing counter, when ok
	pttl    time.Duration // the holder's remaining TTL, when not ok; < 0 if it has none
	holder  string        // who holds the key, when not ok
	// tookOver: a hand-over found the lock it takes over here and replaced it.
	tookOver bool
}

// extended is one master's answer to an extension.
type extended int8

const (
	lapsed  extended = iota // another holds the key here
	renewed                 // the token held the key throughout, and its TTL was set
	vacant                  // the key is free here: the master lost it or it expired
)

// released is one master's answer to a release.
type released int8

const (
	notHeld          released = iota // the token held nothing here
	freed                            // the key was deleted and the release announced
	stillHeld                        // a reentrant lock keeps other holds
	freedUnannounced                 // the key was deleted; the announcement failed
)

// keyState is one master's view of a key, for Inspect.
type keyState struct {
	holder  string
	holds   int
	pttl    time.Duration
	counter int64
}

// node is one master as the algorithm uses it. The Redis implementation is
// redisNode; tests substitute in-memory nodes to drive every outcome.
type node interface {
	addr() string
	acquire(ctx context.Context, r request) (grant, error)
	extend(ctx context.Context, r request) (extended, error)
	release(ctx context.Context, r request) (released, error)
	raiseFence(ctx context.Context, r request, fence int64) (bool, error)
	inspect(ctx context.Context, key string) (keyState, error)
	// health returns what the restart guard last learned of the master.
	health() health
	// subscriber returns a connection for the release announcements.
	subscriber(ctx context.Context) (redis.Conn, error)
}

// redisNode runs the lock's scripts on one master through a pool.Pool.
type redisNode struct {
	pool    pool.Pool
	scripts *scriptSet
	names   names
	clock   clock.Clock
	guard   *guard     // nil when the restart guard is off
	cond    *condition // how the last call went, logged when it changes
}

func (n *redisNode) addr() string { return n.pool.Addr() }

func (n *redisNode) health() health { return n.guard.load() }

func (n *redisNode) subscriber(ctx context.Context) (redis.Conn, error) {
	d, ok := n.pool.(pool.Dialer)
	if !ok {
		return nil, errNoPubSub
	}
	return d.Dial(ctx)
}

// errNoPubSub: the pool cannot open a connection of its own, so waiters on
// this master fall back to their backoff.
var errNoPubSub = errors.New("pool cannot dial a pub/sub connection (it does not implement pool.Dialer)")

func (n *redisNode) acquire(ctx context.Context, r request) (grant, error) {
	v, err := n.eval(ctx, n.scripts.acquire, r.argv.get(n.scripts.acquire, func() []any {
		nm := n.names
		return []any{nm.lock(r.key), nm.fence(r.key), nm.floor(), nm.void(r.token), nm.stamp(), r.token, ms(r.ttl), r.owner, ms(r.ttl + r.keep), r.from}
	}))
	if err != nil {
		return grant{}, err
	}
	xs, err := redis.Values(v, nil)
	if err != nil || len(xs) < 2 {
		return grant{}, fmt.Errorf("acquire: unexpected reply %v", v)
	}
	ok, err1 := redis.Int64(xs[0], nil)
	num, err2 := redis.Int64(xs[1], nil)
	if err1 != nil || err2 != nil {
		return grant{}, fmt.Errorf("acquire: unexpected reply %v", v)
	}
	if ok == 1 {
		g := grant{ok: true, counter: num}
		if len(xs) > 2 {
			took, _ := redis.Int64(xs[2], nil)
			g.tookOver = took == 1
		}
		return g, nil
	}
	g := grant{pttl: time.Duration(num) * time.Millisecond}
	if len(xs) > 2 {
		g.holder, _ = redis.String(xs[2], nil)
	}
	return g, nil
}

func (n *redisNode) extend(ctx context.Context, r request) (extended, error) {
	v, err := redis.Int64(n.eval(ctx, n.scripts.extend, r.argv.get(n.scripts.extend, func() []any {
		return []any{n.names.lock(r.key), r.token, ms(r.ttl), r.owner}
	})))
	return extended(v), err
}

func (n *redisNode) release(ctx context.Context, r request) (released, error) {
	v, err := redis.Int64(n.eval(ctx, n.scripts.release, r.argv.get(n.scripts.release, func() []any {
		channel, tomb := n.names.channel(r.key), ""
		if r.rollback {
			channel = ""
		}
		if r.rollback || r.tombstone {
			tomb = ms(r.ttl)
		}
		return []any{n.names.lock(r.key), n.names.void(r.token), r.token, r.owner, channel, tomb}
	})))
	return released(v), err
}

func (n *redisNode) raiseFence(ctx context.Context, r request, fence int64) (bool, error) {
	v, err := redis.Int64(n.eval(ctx, n.scripts.fence,
		n.scripts.fence.argv(n.names.lock(r.key), n.names.fence(r.key), n.names.floor(), r.token, r.owner, fence, ms(r.ttl+r.keep))))
	return v == 1, err
}

func (n *redisNode) inspect(ctx context.Context, key string) (keyState, error) {
	v, err := redis.Values(n.eval(ctx, n.scripts.inspect, n.scripts.inspect.argv(n.names.lock(key), n.names.fence(key), n.names.floor())))
	if err != nil {
		return keyState{}, err
	}
	var s keyState
	var pttl int64
	if _, err := redis.Scan(v, &s.holder, &s.holds, &pttl, &s.counter); err != nil {
		return keyState{}, fmt.Errorf("inspect: %w", err)
	}
	s.pttl = time.Duration(pttl) * time.Millisecond
	return s, nil
}

// eval runs a script with the argument vector made by script.argv. A
// connection found dead (the master restarted since it was pooled) is
// replaced, within ctx.
func (n *redisNode) eval(ctx context.Context, s *script, argv []any) (any, error) {
	var err error
	for try := 0; try < 3; try++ {
		var v any
		var retry bool
		v, retry, err = n.evalOnce(ctx, s, argv)
		if !retry {
			n.cond.note(err)
			return v, err
		}
	}
	n.cond.note(err)
	return nil, err
}

func (n *redisNode) evalOnce(ctx context.Context, s *script, argv []any) (reply any, retry bool, err error) {
	timeout, err := remaining(ctx, n.clock)
	if err != nil {
		return nil, false, err
	}
	if n.clock != clock.Real() {
		// ctx's deadline is on the client's clock; the pool and the
		// network read deadlines on the real one. Give them the time left,
		// and keep ctx's cancellation.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		defer context.AfterFunc(ctx, cancel)()
		ctx = dctx
	}
	conn, err := n.pool.Get(ctx)
	if err != nil {
		return nil, false, err
	}
	defer conn.Close()
	check, dials := n.guard.due(n.pool)
	if s.identity {
		argv = n.guard.withIdentity(argv, check)
	}
	if check {
		reply, err = n.evalChecked(conn, timeout, dials, argv)
	} else {
		reply, err = redis.DoWithTimeout(conn, timeout, "EVALSHA", argv...)
	}
	if isNoScript(err) {
		// The master lost its script cache: send the source, on a copy, as
		// the vector is shared by every master.
		src := append([]any{s.src}, argv[1:]...)
		reply, err = redis.DoWithTimeout(conn, timeout, "EVAL", src...)
	}
	if isReadOnly(err) {
		n.guard.askAgain()
	}
	if err != nil && stale(err) && ctx.Err() == nil {
		n.guard.connectionLost()
		return nil, true, err
	}
	return reply, false, unauthenticated(err)
}

// unauthenticated turns the protocol error with which Redis answers a
// pipeline on a connection that has not authenticated into the NOAUTH it
// stands for: the master requires a password and none was given.
func unauthenticated(err error) error {
	var re redis.Error
	if errors.As(err, &re) && strings.Contains(string(re), "unauthenticated") {
		return fmt.Errorf("%w (the master requires a password: give it in the address, redis://user:password@host:port)",
			redis.Error("NOAUTH Authentication required"))
	}
	return err
}

// evalChecked sends the guard's questions ahead of the script on the same
// connection: one round trip, and the answers are in before the vote counts.
// It asks for the master's identity and uptime (INFO server), its role and
// replication history (INFO replication), its eviction policy (INFO memory),
// its persistence (CONFIG GET append*), and the stamp the acquire script
// leaves on its fence data. Any of them may be denied to the client's user;
// the guard reads a denial as unknown.
func (n *redisNode) evalChecked(conn redis.Conn, timeout time.Duration, dials uint64, args []any) (any, error) {
	conn.Send("INFO", "server")
	conn.Send("INFO", "replication")
	conn.Send("INFO", "memory")
	conn.Send("CONFIG", "GET", "append*")
	conn.Send("GET", n.names.stamp())
	conn.Send("EVALSHA", args...)
	all, err := redis.Values(redis.DoWithTimeout(conn, timeout, ""))
	if err != nil {
		return nil, err
	}
	if len(all) != 6 {
		return nil, fmt.Errorf("pipeline: %d replies, want 6", len(all))
	}
	n.guard.observe(n.addr(), reading{server: all[0], replication: all[1], memory: all[2], config: all[3], stamp: all[4]}, dials)
	if e, ok := all[5].(redis.Error); ok {
		return nil, e
	}
	return all[5], nil
}

// remaining is the time left before ctx's deadline, on clk: the clock that
// set the deadline.
func remaining(ctx context.Context, clk clock.Clock) (time.Duration, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, errors.New("operation has no deadline")
	}
	d := dl.Sub(clk.Now())
	if d <= 0 {
		return 0, context.DeadlineExceeded
	}
	return d, nil
}

// isReadOnly reports a write refused by a replica: the master may have been
// demoted, or was a replica all along.
func isReadOnly(err error) bool {
	re, ok := err.(redis.Error)
	return ok && strings.HasPrefix(string(re), "READONLY")
}

func isNoScript(err error) bool {
	re, ok := err.(redis.Error) // redigo returns server errors unwrapped
	return ok && strings.HasPrefix(string(re), "NOSCRIPT")
}

// stale reports errors of a connection that died while it sat in the pool,
// as after a master restart; a fresh connection may well succeed.
func stale(err error) bool {
	var re redis.Error
	if errors.As(err, &re) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}

// ms renders a duration as whole milliseconds for PX and PEXPIRE.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
