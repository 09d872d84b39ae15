package redlock

import (
	"context"
	"sync"
	"time"
)

// hub lets waiters sleep until a release is announced instead of polling.
//
// Goroutines of one Client waiting for the same key queue in arrival order;
// only the first in line competes, so they do not split each other's votes.
// A release by this client wakes the first in line directly. A release by
// another client is announced on the key's channel on every master; the hub
// hears it through one pub/sub connection per master, shared by all keys,
// subscribed to a key's channel while anyone here waits for it.
type hub struct {
	c    *Client
	need int // subscriptions that guarantee hearing any quorum's release

	mu       sync.Mutex
	queues   map[string]*queue
	subs     []*subscriber
	started  bool
	closed   bool
	deaf     int           // masters that cannot announce: their pool has no pub/sub
	hopeless chan struct{} // closed once too many are deaf for any confirmation quorum
}

type queue struct {
	key       string
	waiters   []*waiter
	confirmed []bool
	nconf     int
	ready     chan struct{} // closed the first time need masters confirmed the subscription
	readied   bool
	streak    int // hand-overs in a row; see claim
}

type waiter struct {
	h    *hub
	q    *queue
	ttl  time.Duration
	lo   lockOptions
	wake chan struct{} // a release was announced; buffered so none is missed
	turn chan struct{} // closed when this waiter is first in line

	// Guarded by h.mu. A waiter first in line that is not busy with an
	// attempt of its own may be claimed by a releaser and handed the lock;
	// the outcome comes on handed.
	busy, claimed bool
	handed        chan *Lock // buffered: nil means the hand-over failed, try again
}

// maxHandovers bounds how often a key passes straight between goroutines of
// this client before a plain release gives other clients' waiters their turn.
const maxHandovers = 8

func newHub(c *Client) *hub {
	h := &hub{c: c, queues: map[string]*queue{}, hopeless: make(chan struct{})}
	// A release needs a quorum Q of the N masters; listening on N-Q+1 of
	// them means listening on at least one master of any such quorum.
	h.need = len(c.nodes) - c.quorum + 1
	for i := range c.nodes {
		cond := &condition{log: c.o.logger, addr: c.nodes[i].addr(),
			what: "release announcements from master", effect: "waiters fall back to their backoff"}
		h.subs = append(h.subs, &subscriber{h: h, node: i, want: map[string]bool{}, cond: cond})
	}
	return h
}

// join queues a waiter for key (wanting it for ttl, with lo) and subscribes
// to its channel if nobody here was waiting for it yet.
func (h *hub) join(key string, ttl time.Duration, lo lockOptions) *waiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	if q == nil {
		q = &queue{key: key, confirmed: make([]bool, len(h.subs)), ready: make(chan struct{})}
		h.queues[key] = q
		if !h.closed && !h.started {
			h.started = true
			for _, s := range h.subs {
				h.c.spawn(s.run)
			}
		}
		for _, s := range h.subs {
			s.subscribe(h.c.names().channel(key))
		}
	}
	w := &waiter{h: h, q: q, ttl: ttl, lo: lo, wake: make(chan struct{}, 1), turn: make(chan struct{}), handed: make(chan *Lock, 1)}
	q.waiters = append(q.waiters, w)
	if len(q.waiters) == 1 {
		close(w.turn)
		w.poke() // first in line: try again as soon as the subscription is up
	}
	return w
}

// waiting reports whether goroutines of this client wait for key.
func (h *hub) waiting(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.queues[key] != nil
}

// ready waits until enough masters confirmed the subscription, at most timeout.
func (w *waiter) ready(ctx context.Context, timeout time.Duration) {
	t := w.h.c.o.clock.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.q.ready:
	case <-w.h.hopeless:
	case <-t.C():
	case <-ctx.Done():
	case <-w.h.c.closing:
	}
}

// deafSpell reports whether a release could go unheard only for a moment:
// enough pub/sub connections are up, but they have not all confirmed this
// key's subscription yet. During an outage (too few connections) it is
// false: then the backoff paces the retries.
func (w *waiter) deafSpell() bool {
	h := w.h
	h.mu.Lock()
	confirmed := w.q.nconf
	h.mu.Unlock()
	if confirmed >= h.need {
		return false
	}
	up := 0
	for _, s := range h.subs {
		s.mu.Lock()
		if s.conn != nil {
			up++
		}
		s.mu.Unlock()
	}
	return up >= h.need
}

func (w *waiter) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// wait blocks until this waiter is first in line and then until a release
// is announced, delay has passed, or a releaser of this client hands it the
// lock. It returns the lock handed over, if any; ctx's error; or ErrClosed.
func (w *waiter) wait(ctx context.Context, delay time.Duration) (*Lock, error) {
	closing := w.h.c.closing
	select {
	case <-w.turn:
	case <-ctx.Done():
		return w.giveUp(ctx, ctx.Err())
	case <-closing:
		return w.giveUp(ctx, ErrClosed)
	}
	t := w.h.c.o.clock.NewTimer(delay)
	defer t.Stop()
	select {
	case <-w.wake:
	case <-t.C():
	case l := <-w.handed:
		w.settle()
		return l, nil
	case <-ctx.Done():
		return w.giveUp(ctx, ctx.Err())
	case <-closing:
		return w.giveUp(ctx, ErrClosed)
	}
	return nil, nil
}

// begin marks the waiter busy with an attempt of its own, unless a releaser
// has claimed it: then it waits for the hand-over under way, one round
// bounded by the node timeout, and returns its outcome with claimed set.
func (w *waiter) begin() (handed *Lock, claimed bool) {
	w.h.mu.Lock()
	if !w.claimed {
		w.busy = true
		w.h.mu.Unlock()
		return nil, false
	}
	w.h.mu.Unlock()
	l := <-w.handed
	w.settle()
	return l, true
}

// end marks the waiter's attempt over.
func (w *waiter) end() {
	w.h.mu.Lock()
	w.busy = false
	w.h.mu.Unlock()
}

// settle clears a claim whose outcome was taken.
func (w *waiter) settle() {
	w.h.mu.Lock()
	w.claimed = false
	w.h.mu.Unlock()
}

// giveUp ends the wait with err. A hand-over already under way to this
// waiter is waited for, and the lock it brings is given back.
func (w *waiter) giveUp(ctx context.Context, err error) (*Lock, error) {
	w.h.mu.Lock()
	claimed := w.claimed
	w.h.mu.Unlock()
	if claimed {
		if l := <-w.handed; l != nil {
			l.Release(context.WithoutCancel(ctx))
		}
		w.settle()
	}
	return nil, err
}

// claim picks the waiter a release of key may hand the lock to: the first
// in line, not busy with an attempt, waiting for a plain lock. Goroutines
// of one client could pass a key between them for ever; after maxHandovers
// in a row claim says no, so that a plain release announces the key to
// other clients' waiters.
func (h *hub) claim(key string) *waiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	if q == nil || len(q.waiters) == 0 {
		return nil
	}
	w := q.waiters[0]
	if w.busy || w.claimed || w.lo.owner != "" {
		return nil
	}
	if q.streak >= maxHandovers {
		q.streak = 0
		return nil
	}
	q.streak++
	w.claimed = true
	return w
}

// leave takes the waiter out of line. If it was first and did not get the
// lock, the next in line tries at once; if it got the lock, the next waits
// for its release. Out of line, no releaser can claim it any more; a
// hand-over claimed before is waited for, and the lock it brings given back.
func (w *waiter) leave(acquired bool) {
	w.dequeue(acquired)
	w.h.mu.Lock()
	claimed := w.claimed
	w.h.mu.Unlock()
	if claimed {
		if l := <-w.handed; l != nil {
			l.Release(context.Background())
		}
		w.settle()
	}
}

func (w *waiter) dequeue(acquired bool) {
	h := w.h
	h.mu.Lock()
	defer h.mu.Unlock()
	q := w.q
	i := -1
	for j, x := range q.waiters {
		if x == w {
			i = j
			break
		}
	}
	if i < 0 {
		return
	}
	q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
	if len(q.waiters) == 0 {
		delete(h.queues, q.key)
		for _, s := range h.subs {
			s.unsubscribe(h.c.names().channel(q.key))
		}
		return
	}
	if i == 0 {
		next := q.waiters[0]
		close(next.turn)
		if !acquired {
			next.poke()
		}
	}
}

// notify wakes the first waiter for key: its holder released it.
func (h *hub) notify(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[key]; q != nil && len(q.waiters) > 0 {
		q.waiters[0].poke()
	}
}

func (h *hub) confirm(node int, key string, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	if q == nil || q.confirmed[node] == on {
		return
	}
	q.confirmed[node] = on
	if !on {
		q.nconf--
		return
	}
	q.nconf++
	if q.nconf >= h.need && !q.readied {
		q.readied = true
		close(q.ready)
	}
}

// disconnected forgets a master's confirmations when its connection drops.
func (h *hub) disconnected(node int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range h.queues {
		if q.confirmed[node] {
			q.confirmed[node] = false
			q.nconf--
		}
	}
}

// markDeaf records a master that can never announce releases.
func (h *hub) markDeaf() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deaf++
	if len(h.subs)-h.deaf == h.need-1 {
		close(h.hopeless)
	}
}

func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	for _, s := range h.subs {
		s.stop()
	}
}
