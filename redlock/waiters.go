package redlock

import (
	"context"
	"sync"
	"time"
)

// hub lets waiters sleep until a release is announced instead of polling.
//
// Goroutines of one Client waiting for the same key queue in arrival order;
// only the first in line competes, so they do not split each other's votes,
// and only it holds a place in the masters' queues (see place). A release
// by this client wakes the first in line directly. A release by another
// client is announced on the key's channel on every master, naming the
// head of that master's queue; the hub hears it through one pub/sub
// connection per master, shared by all keys, subscribed to a key's channel
// while anyone here waits for it, and wakes its first in line only when the
// announcement names it, or names nobody.
type hub struct {
	c    *Client
	need int // subscriptions that guarantee hearing any quorum's release

	mu                sync.Mutex
	queues            map[string]*queue
	subs              []*subscriber
	started           bool
	closed            bool
	deaf              int           // masters that can never announce (errNoPubSub)
	confirmOutOfReach chan struct{} // closed once too many are deaf for any confirmation quorum
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
	at   *place        // its place in the masters' queues
	wake chan struct{} // a release was announced; buffered so none is missed
	turn chan struct{} // closed when this waiter is first in line

	// Guarded by h.mu. A waiter first in line that is not busy with an
	// attempt of its own may be claimed by a releaser and handed the lock;
	// the outcome comes on handed.
	busy, claimed bool
	handed        chan *Lock // buffered: nil means the hand-over failed, try again
}

func newHub(c *Client) *hub {
	h := &hub{c: c, queues: map[string]*queue{}, confirmOutOfReach: make(chan struct{})}
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

// join queues a waiter for key (wanting it for ttl, with lo, at its place
// in the masters' queues) and subscribes to its channel if nobody here was
// waiting for it yet.
func (h *hub) join(key string, ttl time.Duration, lo lockOptions, at *place) *waiter {
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
			s.subscribe(h.c.names().Channel(key))
		}
	}
	w := &waiter{h: h, q: q, ttl: ttl, lo: lo, at: at, wake: make(chan struct{}, 1), turn: make(chan struct{}), handed: make(chan *Lock, 1)}
	q.waiters = append(q.waiters, w)
	if len(q.waiters) == 1 {
		close(w.turn) // first in line: its caller pokes it when it should try at once
	}
	return w
}

// waiting reports whether goroutines of this client wait for key.
func (h *hub) waiting(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.queues[key] != nil
}

// pokeIfFirst pokes w when it is first in line. A waiter further back
// needs no poke: it comes first either when the waiter before it got the
// lock, whose release then wakes it or hands it the lock, or when that
// waiter left without it, which pokes it (see dequeue). A poke kept until
// then would make it try at once, against the lock just taken, and keep
// the lock's release from handing the key to it.
func (w *waiter) pokeIfFirst() {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	if q := w.q; len(q.waiters) > 0 && q.waiters[0] == w {
		w.poke()
	}
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
		w.h.c.observeWake(ctx, w.q.key, true)
	case <-t.C():
		w.h.c.observeWake(ctx, w.q.key, false)
	case l := <-w.handed:
		w.unclaim()
		return l, nil
	case <-ctx.Done():
		return w.giveUp(ctx, ctx.Err())
	case <-closing:
		return w.giveUp(ctx, ErrClosed)
	}
	return nil, nil
}

// leave takes the waiter out of line. If it was first and did not get the
// lock, the next in line tries at once; if it got the lock, the next waits
// for its release. Out of line, no releaser can claim it any more; a
// hand-over claimed before is waited for, and the lock it brings given back.
func (w *waiter) leave(gotLock bool) {
	w.dequeue(gotLock)
	w.h.mu.Lock()
	claimed := w.claimed
	w.h.mu.Unlock()
	if claimed {
		if l := <-w.handed; l != nil {
			l.Release(context.Background())
		}
		w.unclaim()
	}
}

func (w *waiter) dequeue(gotLock bool) {
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
			s.unsubscribe(h.c.names().Channel(q.key))
		}
		return
	}
	if i == 0 {
		next := q.waiters[0]
		close(next.turn)
		if !gotLock {
			next.poke()
		}
	}
}

// notify wakes the first waiter for key: its holder released it.
func (h *hub) notify(key string) { h.announced(key, "") }

// announced wakes the first waiter for key when a master announced that
// key is free for head: the waiter at the head of its queue, or anyone
// ("") when nobody queues there.
func (h *hub) announced(key, head string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[key]; q != nil && len(q.waiters) > 0 {
		if w := q.waiters[0]; head == "" || w.at == nil || w.at.id == head {
			w.poke()
		}
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
