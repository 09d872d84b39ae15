package goredis

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/driver"
)

// target is one server the calls go to, and the connection (lane) the
// adapter keeps to it. Concurrent calls coalesce: the lane sends what was
// queued on it while its previous batch was out, in one pipelined round
// trip, on its one connection.
//
// One lane takes calls at a time: concurrent calls then reach each master
// in the order they were made, and concurrent acquires get their fence
// numbers from every master in about the same order. Two connections per
// master reorder them apart on each, and the lock raises lagging fence
// counters (an extra round trip of its acquire) many times as often.
//
// A lane is a go-redis Conn: one connection of the client's pool, held for
// the lane's life, so that a call's questions and its script, and a
// script's EVAL after its EVALSHA, go to the same server. Replies are read
// in order, a batch at a time, and each is matched to its call by its
// place in the batch: a reply never reaches another call. A call returns at
// its own deadline even if its batch is still out (see request.expire); if
// no batch came back on its lane while it waited, the lane takes no new
// call until its batch comes back (see stuck). A batch
// that fails on the connection (a timeout included) loses the lane and its
// connection; one that comes back whole, however late, leaves the lane to
// take calls again.
//
// A new lane is opened when none takes calls, but never while another new
// one has not yet had its first batch back, so that a master that hangs
// gets one connection at a time, not a storm.
type target struct {
	m       *Master
	client  *redis.Client
	server  string // "" for a standalone master, the node's address in a cluster
	cluster bool
	ready   *readiness
	// ctxTimeouts: the client bounds reads and writes by the ctx's deadline.
	ctxTimeouts bool

	mu      sync.Mutex
	cur     *lane      // the lane taking calls, if any
	opening bool       // a new lane's first batch is out
	waiting []*request // calls that found no lane taking calls while one was opening
	closed  bool       // no call is placed any more; idle lanes are closed
	// refusals: the lanes in a row that failed before a call on them was
	// served, which space the next (see refused).
	refusals driver.Refusals
}

// refused counts a lane that failed with err before a call on it was
// served, and puts off the next lane: a server that refuses every
// connection (a wrong or missing password, maxclients) is not dialled at
// every call. The caller holds t.mu.
func (t *target) refused(err error) { t.refusals.Add(err, time.Now()) }

// lane is one connection of a target and the calls queued on it.
type lane struct {
	t    *target
	conn *redis.Conn
	// wake starts the lane's goroutine (run) on a batch when the lane was
	// idle; closed when the target closes an idle lane, to end it.
	wake chan struct{}
	// Used by run alone, one batch at a time: the pipeline batches go out
	// on, and the slices a batch is built in, reused.
	pipe    redis.Pipeliner
	scratch scratch
	// Under t.mu.
	queue     []*request // calls not yet sent
	spare     []*request // the last batch's slice, for reuse
	busy      bool       // run is sending batches, and holds an inflight count
	running   bool       // run's goroutine is there, sending or waiting on wake
	batches   uint64     // batches that came back
	opening   bool       // no batch has come back: the connection may not be open yet
	accepting bool       // t.cur
	// answered: a call that carried the guard's questions on the connection
	// has returned their answers, its done.Returned included. Until then
	// the connection is fresh, and every call on it that has a check is
	// asked (driver.Check.Due).
	answered bool
	// served: a call on the lane got a reply that is not an error;
	// errReply is the last error reply before one did, NOSCRIPT aside
	// (see target.refused). Used by the lane's sender alone.
	served   bool
	errReply error
}

// request is one call in flight: its own deadline, and what its batch
// made of it.
type request struct {
	m     *Master
	ctx   context.Context
	call  driver.Call
	done  driver.Done
	timer *time.Timer // runs expire; nil for a ctx without deadline
	tries int
	lost  atomic.Bool // a connection dropped under an earlier try

	taken atomic.Bool          // the reply or the deadline won: the other does nothing
	lane  atomic.Pointer[lane] // where it was last placed
	mark  uint64               // under its target's mu: the lane's batches when it was placed there

	// Set by the batch that sends it.
	check  *driver.Check
	asked  bool
	shares bool    // its answers are those asked at the head of the batch
	own    [][]any // the questions it asks apart, ahead of its script
	first  int     // its first command in the batch: its own questions, or its script
}

func newTarget(m *Master, client *redis.Client, server string, cluster bool) *target {
	opt := client.Options()
	return &target{m: m, client: client, server: server, cluster: cluster,
		ready: newReadiness(opt.Protocol), ctxTimeouts: opt.ContextTimeoutEnabled}
}

// place queues r on a lane, and starts the lane's sender if it is idle.
func (t *target) place(r *request) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		r.finish(driver.Reply{Server: t.server}, ErrClosed)
		return
	}
	if t.cur == nil && !t.opening {
		if err := t.refusals.Held(time.Now()); err != nil {
			t.mu.Unlock()
			r.finish(driver.Reply{Server: t.server}, err)
			return
		}
	}
	l := t.pick()
	if l == nil {
		// Every lane is stuck and a new one is coming up: r waits for it,
		// within its deadline, rather than open one more.
		if len(t.waiting) >= 64 {
			t.waiting = slices.DeleteFunc(t.waiting, func(r *request) bool { return r.taken.Load() })
		}
		t.waiting = append(t.waiting, r)
		r.lane.Store(nil)
		t.mu.Unlock()
		return
	}
	l.queue = append(l.queue, r)
	r.lane.Store(l)
	r.mark = l.batches
	if !l.busy {
		l.busy = true
		t.m.inflight.Add(1) // r's count is held: no race with Close's Wait
		if l.running {
			// Never blocks: an idle lane's goroutine has taken the last token.
			l.wake <- struct{}{}
		} else {
			l.running = true
			go l.run()
		}
	}
	t.mu.Unlock()
}

// pick returns the lane a call goes on: the one taking calls, else a new
// one unless another is opening. The caller holds t.mu.
func (t *target) pick() *lane {
	if t.cur == nil && !t.opening {
		conn := t.client.Conn()
		t.cur = &lane{t: t, conn: conn, wake: make(chan struct{}, 1), pipe: conn.Pipeline(), opening: true, accepting: true}
		t.opening = true
	}
	return t.cur
}

// remove takes l out of the lanes that take calls, and returns the calls
// queued on it, to be placed again. The caller holds t.mu.
func (t *target) remove(l *lane) []*request {
	if l.accepting {
		l.accepting = false
		t.cur = nil
	}
	q := l.queue
	l.queue = nil
	return q
}

// stuck is told that r reached its deadline before its reply. If no batch
// came back on r's lane while r waited, the master may be hung or the
// connection dead: the lane takes no new call until its batch comes back,
// and the calls queued on it go on another lane. If one did, the master is
// answering, only late, and another connection would queue the same: the
// lane stays.
func (t *target) stuck(l *lane, r *request) {
	t.mu.Lock()
	if !l.accepting || !l.busy || l.batches != r.mark {
		t.mu.Unlock()
		return
	}
	moved := t.remove(l)
	t.mu.Unlock()
	t.replace(moved)
}

// replace places again calls taken off a lane.
func (t *target) replace(moved []*request) {
	for _, r := range moved {
		if !r.taken.Load() {
			t.place(r)
		}
	}
}

// close stops placing calls and closes the lane's connection if idle; a busy
// lane closes its own when its queue runs out.
func (t *target) close() {
	t.mu.Lock()
	t.closed = true
	idle := t.cur
	if idle != nil && idle.busy {
		idle = nil
	}
	if idle != nil && idle.running {
		close(idle.wake) // place sends no more: t.closed
		idle.running = false
	}
	t.mu.Unlock()
	if idle != nil {
		idle.conn.Close()
	}
}

// linger is how long the goroutine of a lane that has gone idle waits for
// more calls, at least, before it ends.
const linger = 50 * time.Millisecond

// run is the lane's goroutine, started by place with calls queued on the
// idle lane. It sends them (drain), then waits for the next ones, woken by
// place, until the lane ends or has taken no call for a linger. Keeping
// the goroutine between batches, rather than starting one per batch,
// spares calls that follow each other closely a new goroutine and the
// growth of its stack through go-redis's calls; ending it spares a master
// left unused (or never closed) an idle goroutine.
func (l *lane) run() {
	if !l.drain() {
		return
	}
	idle := time.NewTimer(linger)
	defer idle.Stop()
	active := false // woken since idle was last set
	for {
		select {
		case _, ok := <-l.wake:
			if !ok || !l.drain() {
				return
			}
			active = true
		case <-idle.C:
			if active {
				active = false
				idle.Reset(linger)
				continue
			}
			if l.retire() {
				return
			}
		}
	}
}

// retire reports whether run may end: no call was placed on l since its
// last batch, and the next one starts a goroutine anew.
func (l *lane) retire() bool {
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	if l.busy {
		return false // woken meanwhile: the token is waiting
	}
	l.running = false
	return true
}

// drain sends l's queue, a batch at a time, until it is empty, and reports
// whether the lane goes on; it does not when the lane was lost, or closed
// once idle. It holds an inflight count of the master's.
func (l *lane) drain() bool {
	defer l.t.m.inflight.Done()
	t := l.t
	for {
		t.mu.Lock()
		batch := l.spare[:0]
		for _, r := range l.queue {
			if !r.taken.Load() {
				batch = append(batch, r)
			}
		}
		clear(l.queue)
		l.queue, l.spare = l.queue[:0], nil
		if len(batch) == 0 {
			l.busy = false
			l.spare = batch
			closing := t.closed || !l.accepting
			var moved []*request
			if closing {
				moved = t.remove(l)
				if l.opening {
					// Dropped before its first batch went out (every call
					// on it ended first): another lane may open.
					t.opening = false
					moved = append(moved, t.waiting...)
					t.waiting = nil
				}
			}
			t.mu.Unlock()
			if closing {
				l.conn.Close()
				t.replace(moved)
			}
			return !closing
		}
		opening, fresh := l.opening, !l.answered
		t.mu.Unlock()
		if !l.send(batch, opening, fresh) {
			return false
		}
		clear(batch)
		t.mu.Lock()
		if l.spare == nil {
			l.spare = batch
		}
		t.mu.Unlock()
	}
}

// batchCtx returns the ctx go-redis gets for a batch: the latest of its
// calls' deadlines, plus grace, so that a reply that comes somewhat late is
// still read and the connection kept; none if a call has none. Only a
// client with ContextTimeoutEnabled bounds its reads by it: any other gets
// no deadline, and bounds them by its ReadTimeout.
func (t *target) batchCtx(batch []*request) (context.Context, context.CancelFunc) {
	if !t.ctxTimeouts {
		return context.Background(), func() {}
	}
	var last time.Time
	for _, r := range batch {
		dl, ok := r.ctx.Deadline()
		if !ok {
			return context.Background(), func() {}
		}
		if dl.After(last) {
			last = dl
		}
	}
	return context.WithDeadline(context.Background(), last.Add(grace))
}

// send runs one batch on l's connection: each call's questions when they
// are due, then its script by digest; then, on the same connection, the
// source of the scripts the server had not cached. It delivers each reply,
// and reports whether the lane goes on. opening: no batch has come back on
// the lane yet; fresh: the lane's connection has not answered the
// questions to the lock yet (see lane.answered).
func (l *lane) send(batch []*request, opening, fresh bool) bool {
	t := l.t
	ctx, cancel := t.batchCtx(batch)
	defer cancel()
	if opening {
		if err := t.ready.wait(ctx, t.client); err != nil {
			t.lose(l, batch, serverError(err, t.cluster), opening)
			return false
		}
	}
	// On a fresh connection every call with a check is asked: it may lead
	// to another server process than the last answers came from.
	//
	// Calls that ask the same questions share one set of answers, asked
	// once at the head of the batch: on one connection and ahead of every
	// script, they describe the server that runs them all.
	var shared [][]string
	var sharedCmds [][]any
	sc := &l.scratch
	live := sc.live[:0]
	for _, r := range batch {
		r.check, r.asked, r.shares, r.own = nil, false, false, nil
		if r.call.Check != nil {
			r.check = r.call.Check(t.server)
		}
		r.asked = r.check.Due(fresh)
		if r.asked {
			qs := r.check.Commands()
			switch {
			case shared == nil:
				cmds, err := commands(qs)
				if err != nil {
					r.finish(driver.Reply{Server: t.server}, err)
					continue
				}
				shared, sharedCmds, r.shares = qs, cmds, true
			case sameQuestions(qs, shared):
				r.shares = true
			default:
				cmds, err := commands(qs)
				if err != nil {
					r.finish(driver.Reply{Server: t.server}, err)
					continue
				}
				r.own = cmds
			}
		}
		live = append(live, r)
	}
	sc.live = live
	defer sc.clear()
	if len(live) == 0 {
		return true
	}
	cmds := sc.cmds[:0]
	cmds = append(cmds, sharedCmds...)
	for _, r := range live {
		r.first = len(cmds)
		cmds = append(cmds, r.own...)
		cmds = append(cmds, scriptArgs(r.call, r.check, r.asked))
	}
	sc.cmds = cmds
	got, err := pipeline(ctx, l.pipe, cmds, sc.got)
	if err != nil {
		t.lose(l, live, serverError(err, t.cluster), opening)
		return false
	}
	sc.got = got
	broken := false
	res := slices.Grow(sc.res[:0], len(live))[:len(live)]
	sc.res = res
	var again []int // calls whose script the server lacked
	var sharedAnswers []any
	var sharedErr error
	if len(sharedCmds) > 0 {
		sharedAnswers, sharedErr = answers(got[:len(sharedCmds)])
		broken = connErr(sharedErr)
	}
	for i, r := range live {
		var re result
		switch {
		case r.shares:
			re.answers, re.err = slices.Clone(sharedAnswers), sharedErr
		case r.own != nil:
			re.answers, re.err = answers(got[r.first : r.first+len(r.own)])
		}
		if re.err == nil {
			re.v, re.err = got[r.first+len(r.own)].Result()
			if re.err != nil && isNoScript(re.err) {
				again = append(again, i)
			}
		}
		broken = broken || connErr(re.err)
		l.note(re.err)
		res[i] = re
	}
	if len(again) > 0 && !broken {
		src := make([][]any, len(again))
		for j, i := range again {
			r := live[i]
			s := scriptArgs(r.call, r.check, r.asked)
			s[0], s[1] = "EVAL", &r.call.Script.Src
			src[j] = s
		}
		got2, err := pipeline(ctx, l.pipe, src, nil)
		for j, i := range again {
			if err != nil {
				res[i].err = err
			} else {
				res[i].v, res[i].err = got2[j].Result()
			}
			broken = broken || connErr(res[i].err)
			l.note(res[i].err)
		}
	}

	t.mu.Lock()
	l.batches++
	if opening {
		t.opening = false
		if !broken {
			l.opening = false
		}
	}
	switch {
	case l.served:
		t.refusals.Served()
	case broken:
		if err := firstConnErr(res); driver.Refused(err) {
			t.refused(l.refusal(err))
		}
	}
	var moved []*request
	goOn := !broken
	switch {
	case broken:
		moved = t.remove(l)
	case !l.accepting && !t.closed && t.cur == nil:
		// Stuck earlier, back whole: it takes calls again.
		l.accepting = true
		t.cur = l
	}
	if opening || l.accepting {
		moved = append(moved, t.waiting...)
		t.waiting = nil
	}
	t.mu.Unlock()
	if broken {
		l.conn.Close()
	}
	t.replace(moved)

	// answered: a call took the answers, its done.Returned has returned.
	answered := false
	for i, r := range live {
		re := res[i]
		if re.err == redis.Nil {
			re.v, re.err = nil, nil
		}
		if re.err != nil && r.retry(re.err) {
			continue
		}
		rep := driver.Reply{Server: t.server, Lost: r.lost.Load()}
		if re.err != nil {
			err := serverError(re.err, t.cluster)
			if errors.Is(err, ErrRedirected) {
				t.m.cluster.client.ReloadState(context.Background()) // in the background
			}
			r.finish(rep, err)
			continue
		}
		// A check that asks always leaves the connection as it was: its
		// questions need not be the guard's (see driver.Master.Start).
		checks := r.asked && !r.check.Always
		rep.Answers, rep.Value = re.answers, scriptValue(re.v)
		if r.finish(rep, nil) && checks {
			answered = true
		}
	}
	if fresh && answered {
		// The lock has taken the answers (done.Returned has returned): later
		// calls on the connection may go without the questions. The lane's
		// next batch is built after this, on this goroutine, so none went
		// without them before.
		t.mu.Lock()
		l.answered = true
		t.mu.Unlock()
	}
	return goOn
}

// result is what a batch made of one call.
type result struct {
	v       any
	answers []any
	err     error
}

// scratch holds the slices a lane builds its batches in, kept from one
// batch to the next: a batch allocates none once the lane has sent one as
// large. They are cleared after each batch, so as not to hold its calls.
type scratch struct {
	live []*request
	cmds [][]any
	got  []*redis.Cmd
	res  []result
}

func (sc *scratch) clear() {
	clear(sc.live)
	clear(sc.cmds)
	clear(sc.got)
	clear(sc.res)
}

// lose ends l after its batch failed as a whole with err: its connection
// is closed, the calls queued behind it go elsewhere, and the batch's
// calls are retried or fail. opening: it was the lane's first batch.
func (t *target) lose(l *lane, batch []*request, err error, opening bool) {
	t.mu.Lock()
	moved := t.remove(l)
	if opening {
		t.opening = false
		moved = append(moved, t.waiting...)
		t.waiting = nil
	}
	if !l.served && !errors.Is(err, ErrClosed) && driver.Refused(err) {
		t.refused(l.refusal(err))
	}
	t.mu.Unlock()
	l.conn.Close()
	t.replace(moved)
	for _, r := range batch {
		if !r.retry(err) {
			r.finish(driver.Reply{Server: t.server, Lost: r.lost.Load()}, err)
		}
	}
}

// note records what a reply on l says of the server: that it served a
// call, or, until one did, its error reply.
func (l *lane) note(err error) {
	switch {
	case l.served:
	case err == nil || err == redis.Nil:
		l.served = true
	case !connErr(err) && !isNoScript(err):
		l.errReply = err
	}
}

// refusal is why the server refused l's connection, which failed with err
// before it served a call: its last error reply, if it gave one, else err.
func (l *lane) refusal(err error) error {
	if l.errReply != nil {
		return serverError(l.errReply, l.t.cluster)
	}
	return err
}

// firstConnErr returns the first error of a batch's results that is the
// connection's (see connErr), as the calls get it.
func firstConnErr(res []result) error {
	for _, re := range res {
		if connErr(re.err) {
			return serverError(re.err, false)
		}
	}
	return nil
}

// connErr reports an error of the connection rather than a reply of the
// server's: the lane cannot go on.
func connErr(err error) bool {
	if err == nil || err == redis.Nil {
		return false
	}
	var re redis.Error
	return !errors.As(err, &re)
}

// retry places r again after its connection dropped (a master restart),
// up to twice and while its ctx lasts, and reports whether it did.
func (r *request) retry(err error) bool {
	if r.tries >= 2 || !stale(err) || r.ctx.Err() != nil || r.taken.Load() {
		return false
	}
	r.tries++
	r.lost.Store(true)
	r.m.dispatch(r)
	return true
}

// expire is run at r's deadline: if its reply is not in, r returns
// context.DeadlineExceeded, and its lane may be stuck.
func (r *request) expire() {
	if !r.taken.CompareAndSwap(false, true) {
		return
	}
	rep := driver.Reply{Lost: r.lost.Load()}
	if l := r.lane.Load(); l != nil {
		rep.Server = l.t.server
		l.t.stuck(l, r)
	}
	r.deliver(rep, context.DeadlineExceeded)
}

// finish hands r's outcome over, unless its ctx ended first, and reports
// whether it did: its done.Returned has then returned.
func (r *request) finish(rep driver.Reply, err error) bool {
	if !r.taken.CompareAndSwap(false, true) {
		return false
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	r.deliver(rep, err)
	return true
}

func (r *request) deliver(rep driver.Reply, err error) {
	defer r.m.inflight.Done()
	r.done.Returned(rep, err)
}

// sameQuestions reports whether a and b are the same commands.
func sameQuestions(a, b [][]string) bool {
	return slices.EqualFunc(a, b, slices.Equal[[]string])
}
