package redlock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// request names one lock operation on one master.
type request struct {
	key, token, owner string
	ttl               time.Duration // for acquire and extend
	keep              time.Duration // how long a lock's fence record outlives the lock
	rollback          bool          // a release that undoes a failed attempt: no announcement, a tombstone
	tombstone         bool          // a release that leaves the token's tombstone
	from              string        // an acquire that takes the key over from this plain lock's token
	propose           int64         // an acquire's proposal for a new count (see Client.propose), 0 for none
	fence             int64         // a release that first raises the key's fencing counter to this, 0 for none
	// waiter queues an acquire that is refused, at ticket, for lease (see
	// place); "" for an acquire that does not queue.
	waiter string
	ticket int64
	lease  time.Duration
	calls  *calls // the operation's calls as built for one master, for the others; nil for none
	// permits is K for a semaphore's permit (see Semaphore), 0 for a lock:
	// a permit runs the permit scripts, and needs quorum masters, not the
	// client's quorum (see need).
	permits, quorum int
	// read is a read hold of an RWLock: read.lua takes it, and the permit
	// scripts, whose layout it shares, extend, release and fence it, with
	// permits scripts.Readers.
	read bool
	// set is the keys of a hold of several keys at once (see LockAll), key
	// its first; nil for one key. Such a hold runs the set's scripts.
	set *keySet
}

// keySet is the keys of a hold of several keys at once, in the caller's
// order (see LockAll).
type keySet struct{ keys []string }

// need is the number of masters an operation needs: quorum, a permit's,
// when it is not 0, else the client's.
func (c *Client) need(quorum int) int {
	if quorum > 0 {
		return quorum
	}
	return c.quorum
}

// calls keeps the acquire and the release of one attempt's lock as built
// for a master, so that every other master with the same names (every
// plain master of a client) sends the same call without building its keys
// and arguments again. An entry serves only the request and names it was
// built for.
type calls struct {
	mu               sync.Mutex
	acquire, release callFor
}

// callFor is a call built for one request and one master's names.
type callFor struct {
	built bool
	req   request
	names scripts.Names
	call  driver.Call
}

// of returns the call for r on a master with names n: e's, or build's,
// which it keeps in e when e is empty.
func (cs *calls) of(e *callFor, r request, n scripts.Names, build func() driver.Call) driver.Call {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if e.built && e.req == r && e.names == n {
		return e.call
	}
	c := build()
	if !e.built {
		*e = callFor{built: true, req: r, names: n, call: c}
	}
	return c
}

// node is one master as the algorithm uses it. The Redis implementation is
// master; tests substitute in-memory nodes to drive every outcome.
type node interface {
	addr() string
	// startAcquire, startExtend and startRelease start an operation on the
	// lock and hand what the master answered to p's taker, exactly once,
	// from any goroutine: master's from its connection's reader, with no
	// goroutine of the lock's waiting for it. The caller keeps p until then.
	startAcquire(ctx context.Context, r request, p *pending[scripts.Grant])
	startExtend(ctx context.Context, r request, p *pending[scripts.Extended])
	startRelease(ctx context.Context, r request, p *pending[scripts.Released])
	// startRaise raises the fencing counter of r's lock to fence where r's
	// token holds it: true when it did.
	startRaise(ctx context.Context, r request, fence int64, p *pending[bool])
	// leave takes waiter out of key's waiting queue, for good: an acquire
	// of the waiter arriving within lease does not queue it again.
	leave(ctx context.Context, key, waiter string, lease time.Duration) error
	// startInspect reads key's state; with a token, whether that token (a
	// hold of owner, for a reentrant lock) holds it.
	startInspect(ctx context.Context, key, token, owner string, p *pending[scripts.State])
	// health returns what the restart guard last learned of the master, or
	// of a cluster's shard master owning key.
	health(key string) health
	// silent reports whether the master answers nothing at all: its last
	// call got no reply, and no call got an answer for window (see
	// server). A Redis Cluster given as one node is never silent: its
	// shards answer for themselves.
	silent(window time.Duration) bool
	// subscribe opens a connection for the release announcements.
	subscribe(ctx context.Context) (driver.Subscription, error)
}

// taker takes what a master answered a started call: the decoded reply,
// or why the call failed. It is called exactly once, from any goroutine.
type taker[T any] interface {
	take(v T, err error)
}

// pending is a call started on a master until its reply is in: the driver
// hands the reply to it (driver.Done), and it hands what the master
// answered, decoded, to its taker (see start). Its caller keeps it, in a
// fan-out's parts, so that a call costs no allocation of its own.
type pending[T any] struct {
	to      taker[T]
	m       *master
	call    driver.Call
	decode  func(any) (T, error)
	cancel  context.CancelFunc // ends the real-clock deadline start gave the driver
	started callStart
}

// Returned takes the driver's reply.
func (p *pending[T]) Returned(rep driver.Reply, err error) {
	p.cancel()
	v, err := p.m.answered(p.call, rep, err, p.started)
	if err != nil {
		var zero T
		p.to.take(zero, err)
		return
	}
	p.to.take(p.decode(v))
}

// awaitAcquire is an acquire on n for a caller with a goroutine of its own
// to wait in: background work, and tests.
func awaitAcquire(ctx context.Context, n node, r request) (scripts.Grant, error) {
	return awaitCall(func(p *pending[scripts.Grant]) { n.startAcquire(ctx, r, p) })
}

// awaitExtend is awaitAcquire's extension.
func awaitExtend(ctx context.Context, n node, r request) (scripts.Extended, error) {
	return awaitCall(func(p *pending[scripts.Extended]) { n.startExtend(ctx, r, p) })
}

// awaitRelease is awaitAcquire's release.
func awaitRelease(ctx context.Context, n node, r request) (scripts.Released, error) {
	return awaitCall(func(p *pending[scripts.Released]) { n.startRelease(ctx, r, p) })
}

// awaitRaise is awaitAcquire's raise of the fencing counter.
func awaitRaise(ctx context.Context, n node, r request, fence int64) (bool, error) {
	return awaitCall(func(p *pending[bool]) { n.startRaise(ctx, r, fence, p) })
}

// awaitInspect is awaitAcquire's read of key's state.
func awaitInspect(ctx context.Context, n node, key, token, owner string) (scripts.State, error) {
	return awaitCall(func(p *pending[scripts.State]) { n.startInspect(ctx, key, token, owner, p) })
}

// awaitCall starts a call with start and waits for what the master answered.
func awaitCall[T any](start func(p *pending[T])) (T, error) {
	w := awaited[T]{got: make(chan struct{})}
	p := &pending[T]{to: &w}
	start(p)
	<-w.got
	return w.v, w.err
}

// awaited is awaitCall's taker.
type awaited[T any] struct {
	v   T
	err error
	got chan struct{}
}

func (w *awaited[T]) take(v T, err error) {
	w.v, w.err = v, err
	close(w.got)
}

// each is the Start of a fan-out in which node i's part is the call that
// start starts on it; judge turns what the master answered into the part's
// value, vote and error. The parts share one allocation.
func each[V, T any](n int, start func(ctx context.Context, i int, p *pending[V]), judge func(i int, v V, err error) (T, fanout.Vote, error)) fanout.Start[T] {
	parts := make([]part[V, T], n)
	return func(ctx context.Context, nd *fanout.Node[T]) {
		p := &parts[nd.Index()]
		p.n, p.judge = nd, judge
		p.out.to = p
		start(ctx, nd.Index(), &p.out)
	}
}

// part is one node's part of a fan-out made by each.
type part[V, T any] struct {
	out   pending[V]
	n     *fanout.Node[T]
	judge func(i int, v V, err error) (T, fanout.Vote, error)
}

func (p *part[V, T]) take(v V, err error) { p.n.Answer(p.judge(p.n.Index(), v, err)) }

// master runs the lock's scripts on one master through its driver.
type master struct {
	drv     driver.Master
	scripts *scripts.Set
	names   scripts.Names
	clock   clock.Clock
	servers *servers // what the lock knows of the servers behind the node
	// plainCheck is check for a plain master, whose check is the same for
	// every key: made once (see newMaster).
	plainCheck func(server string) *driver.Check
}

// newMaster returns the master over drv, with the client's options o;
// window is the restart guard's window (nil for no guard, in tests of
// other parts).
func newMaster(drv driver.Master, set *scripts.Set, names scripts.Names, o *options, window func() time.Duration) *master {
	m := &master{drv: drv, scripts: set, names: names, clock: o.clock, servers: newServers(drv.Addr(), o, window)}
	m.plainCheck = func(server string) *driver.Check { return m.check(server, "") }
	return m
}

func (m *master) addr() string { return m.drv.Addr() }

func (m *master) subscribe(ctx context.Context) (driver.Subscription, error) {
	ctx, cancel := m.realDeadline(ctx)
	defer cancel()
	return m.drv.Subscribe(ctx)
}

func (m *master) startAcquire(ctx context.Context, r request, p *pending[scripts.Grant]) {
	p.decode = scripts.DecodeGrant
	start(ctx, m, m.acquireCall(r), p)
}

func (m *master) acquireCall(r request) driver.Call {
	build := func() driver.Call {
		if r.read {
			return scripts.Read{Key: r.key, Token: r.token, TTL: r.ttl, Propose: r.propose}.Call(m.scripts, m.names)
		}
		if r.set != nil {
			return scripts.AcquireAll{Keys: r.set.keys, Token: r.token, TTL: r.ttl, Propose: r.propose}.Call(m.scripts, m.names)
		}
		if r.permits > 0 {
			p := scripts.Permit{Key: r.key, Token: r.token, TTL: r.ttl, Permits: r.permits, Propose: r.propose,
				Waiter: r.waiter, Ticket: r.ticket, Lease: r.lease}
			return p.Call(m.scripts, m.names)
		}
		a := scripts.Acquire{Key: r.key, Token: r.token, TTL: r.ttl, Owner: r.owner, Keep: r.keep, From: r.from, Propose: r.propose,
			Waiter: r.waiter, Ticket: r.ticket, Lease: r.lease}
		return a.Call(m.scripts, m.names)
	}
	if r.calls == nil {
		return build()
	}
	return r.calls.of(&r.calls.acquire, r, m.names, build)
}

func (m *master) startExtend(ctx context.Context, r request, p *pending[scripts.Extended]) {
	call := scripts.Extend{Key: r.key, Token: r.token, TTL: r.ttl, Owner: r.owner}.Call(m.scripts, m.names)
	if r.permits > 0 {
		call = scripts.PermitExtend{Key: r.key, Token: r.token, TTL: r.ttl, Permits: r.permits}.Call(m.scripts, m.names)
	}
	if r.set != nil {
		call = scripts.ExtendAll{Keys: r.set.keys, Token: r.token, TTL: r.ttl}.Call(m.scripts, m.names)
	}
	p.decode = scripts.DecodeExtended
	start(ctx, m, call, p)
}

func (m *master) startRelease(ctx context.Context, r request, p *pending[scripts.Released]) {
	p.decode = scripts.DecodeReleased
	start(ctx, m, m.releaseCall(r), p)
}

func (m *master) releaseCall(r request) driver.Call {
	sharded := m.drv.Sharded()
	build := func() driver.Call {
		if r.set != nil {
			rel := scripts.ReleaseAll{Keys: r.set.keys, Token: r.token, Rollback: r.rollback, Tombstone: r.tombstone, TTL: r.ttl,
				Sharded: sharded, Fence: r.fence}
			return rel.Call(m.scripts, m.names)
		}
		rel := scripts.Release{Key: r.key, Token: r.token, Owner: r.owner, Rollback: r.rollback, Tombstone: r.tombstone, TTL: r.ttl,
			Sharded: sharded, Fence: r.fence, Keep: r.ttl + r.keep, Waiter: r.waiter, Ticket: r.ticket, Lease: r.lease}
		if r.permits > 0 {
			return rel.PermitCall(m.scripts, m.names)
		}
		return rel.Call(m.scripts, m.names)
	}
	if r.calls == nil || sharded { // a sharded node's release differs from a plain one's
		return build()
	}
	return r.calls.of(&r.calls.release, r, m.names, build)
}

func (m *master) leave(ctx context.Context, key, waiter string, lease time.Duration) error {
	l := scripts.Leave{Key: key, Waiter: waiter, Sharded: m.drv.Sharded(), Lease: lease}
	v, err := m.eval(ctx, l.Call(m.scripts, m.names))
	if err == nil {
		_, err = scripts.DecodeLeft(v)
	}
	return err
}

func (m *master) startRaise(ctx context.Context, r request, fence int64, p *pending[bool]) {
	f := scripts.Fence{Key: r.key, Token: r.token, Owner: r.owner, Fence: fence, Keep: r.ttl + r.keep}
	call := f.Call
	if r.permits > 0 {
		call = f.PermitCall
	}
	if r.set != nil {
		call = scripts.FenceAll{Keys: r.set.keys, Token: r.token, Fence: fence}.Call
	}
	p.decode = scripts.DecodeRaised
	start(ctx, m, call(m.scripts, m.names), p)
}

func (m *master) startInspect(ctx context.Context, key, token, owner string, p *pending[scripts.State]) {
	p.decode = scripts.DecodeState
	start(ctx, m, scripts.Inspect{Key: key, Token: token, Owner: owner}.Call(m.scripts, m.names), p)
}

// eval runs one call through the driver and waits for what the master
// answered (see start).
func (m *master) eval(ctx context.Context, call driver.Call) (any, error) {
	return awaitCall(func(p *pending[any]) {
		p.decode = asIs
		start(ctx, m, call, p)
	})
}

func asIs(v any) (any, error) { return v, nil }

// start runs one call through the driver, without a goroutine of the
// lock's waiting: p takes the reply inside Returned, where it hands the
// guard what the call learned of the master, and its taker what the master
// answered, decoded. The reply must be taken there: the driver counts a
// connection as checked once Returned has returned with the guard's
// answers (see driver.Master.Start).
func start[T any](ctx context.Context, m *master, call driver.Call, p *pending[T]) {
	now := m.clock.Now()
	if _, err := remainingAt(ctx, now); err != nil {
		var zero T
		p.to.take(zero, err)
		return
	}
	rctx, cancel := m.realDeadline(ctx)
	p.m, p.call, p.cancel = m, m.checked(call), cancel
	p.started = callStart{reads: m.servers.reads.Load(), at: now.UnixNano()}
	m.drv.Start(rctx, p.call, p)
}

// checked returns call with the restart guard's part, when the guard is on.
func (m *master) checked(call driver.Call) driver.Call {
	switch {
	case !m.servers.guarded():
	case !m.names.PerSlot:
		call.Check = m.plainCheck // the same for every key: see check
	default:
		key := strings.TrimPrefix(call.Keys[0], m.names.NS) // every script's first key is the lock
		call.Check = func(server string) *driver.Check { return m.check(server, key) }
	}
	return call
}

// realDeadline returns ctx with its deadline on the real clock, which the
// driver's network deadlines use. ctx's deadline is on the client's clock;
// with another clock than the real one, the driver is given the time left,
// and keeps ctx's cancellation.
func (m *master) realDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if m.clock == clock.Real() {
		return ctx, func() {}
	}
	left, err := remaining(ctx, m.clock)
	if err != nil {
		return ctx, func() {}
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), left)
	stop := context.AfterFunc(ctx, cancel)
	return dctx, func() { stop(); cancel() }
}

// remaining is the time left before ctx's deadline, on clk: the clock that
// set the deadline.
func remaining(ctx context.Context, clk clock.Clock) (time.Duration, error) {
	return remainingAt(ctx, clk.Now())
}

// remainingAt is remaining at now, a time read from that clock.
func remainingAt(ctx context.Context, now time.Time) (time.Duration, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, errors.New("operation has no deadline")
	}
	d := dl.Sub(now)
	if d <= 0 {
		return 0, context.DeadlineExceeded
	}
	return d, nil
}
