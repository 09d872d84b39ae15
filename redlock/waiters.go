package redlock

import (
	"context"
	"sync"
	"time"
)

// hub lets waiters sleep until a release is announced instead of polling.
//
// Goroutines of one Client waiting for the same key queue in arrival order;
// only those in turn compete, and only they hold places in the masters'
// queues (see place). For a lock or a read hold that is the first in line
// alone, so that they do not split each other's votes; for a semaphore of
// K permits it is the first K, since K of them may hold a permit at once
// (see waiter.width). A release by this client wakes the first in line
// directly. A release by another client is announced on the key's channel
// on every master, naming the head of that master's queue; the hub hears
// it through one pub/sub connection per master, shared by all keys,
// subscribed to a key's channel while anyone here waits for it, and wakes
// the waiter in turn that the announcement names, or the first in line
// when it names nobody.
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
	turn chan struct{} // closed when this waiter's turn comes; see inTurn
	// inTurn, guarded by h.mu: the waiter stands among the first width()
	// in line, and competes.
	inTurn bool

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
		h.subs = append(h.subs, newSubscriber(h, i, cond))
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
	q.giveTurns() // in turn at once, its caller pokes it when it should try at once
	return w
}

// width is how many waiters of this client in line for w's key may compete
// at once: K for a semaphore's permit, one for anything else.
func (w *waiter) width() int { return max(1, w.lo.permits) }

// giveTurns gives their turn to the waiters among the first width() in
// line that have none yet, and returns them. The caller holds h.mu.
func (q *queue) giveTurns() []*waiter {
	var given []*waiter
	for j, x := range q.waiters {
		if j >= x.width() {
			break
		}
		if !x.inTurn {
			x.inTurn = true
			close(x.turn)
			given = append(given, x)
		}
	}
	return given
}

// hasTurn reports whether w's turn has come: it competes for the key.
func (w *waiter) hasTurn() bool {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	return w.inTurn
}

// placeNow returns w's place in the masters' queues.
func (w *waiter) placeNow() *place {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	return w.at
}

// movePlace gives w another place in the masters' queues.
func (w *waiter) movePlace(at *place) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	w.at = at
}

// waiting reports whether goroutines of this client wait for key.
func (h *hub) waiting(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.queues[key] != nil
}

// pokeIfInTurn pokes w when its turn has come. A waiter further back
// needs no poke: its turn comes either when a waiter before it got the
// lock, whose release then wakes it or hands it the lock, or when that
// waiter left without it, which pokes it (see dequeue). A poke kept until
// then would make it try at once, against the lock just taken, and keep
// the lock's release from handing the key to it.
func (w *waiter) pokeIfInTurn() {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	if w.inTurn {
		w.poke()
	}
}

func (w *waiter) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// wait blocks until this waiter's turn has come and then until a release
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

// leave takes the waiter out of line. If it was in turn, the next in line
// without a turn gets one. That one tries at once if this waiter did not
// get the lock, or if it waits for a permit: it has no place on the
// masters yet, and another permit may be free. Otherwise it waits for the
// lock's release. Out of line, no releaser can claim it any more; a
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
	if w.inTurn {
		for _, next := range q.giveTurns() {
			if !gotLock || next.lo.permits > 0 {
				next.poke()
			}
		}
	}
}

// notify wakes the first waiter for key: its holder released it.
func (h *hub) notify(key string) { h.announced(key, "") }

// announced wakes a waiter for key when a master announced that key is
// free for head, the waiter at the head of its queue: the waiter in turn
// whose place head names, or the first in line when head is "" (nobody
// queues there). A reader holds no place, and is woken only when nobody
// queues: a head that queues is a writer, and readers are refused while
// one waits (see read.lua), so every release would wake every client's
// readers to be refused.
func (h *hub) announced(key, head string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	if q == nil {
		return
	}
	for j, w := range q.waiters {
		if j >= w.width() {
			break
		}
		if head == "" || (w.at != nil && w.at.id == head) {
			w.poke()
			return
		}
	}
}

// close stops every master's subscriber. They stop at once: closing a
// connection can wait on its master (a driver reconnecting it), and Close
// then waits for the slowest master, not for the sum of them.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range h.subs {
		wg.Go(s.stop)
	}
	wg.Wait()
}
