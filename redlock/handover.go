package redlock

import "context"

// handOver passes a plain lock straight to a goroutine of this client that
// waits for it, in one round instead of a release and an acquire: on each
// master the key goes from this token to the waiter's, never free in
// between, under the rules of any acquisition (quorum, validity, fence,
// roll-back). If the hand-over fails the waiter tries again by itself and
// this lock is released as usual; if it succeeds, this lock is still
// released on the masters that did not take it (see
// releaseWhereNotTaken). A lock past its validity is not handed over: its
// Release must report it.
//
// Each master is handed over on its own, as a release would be: the
// waiter's acquire goes to a master once every request of this lock's
// trail there has returned (acquireRound), and not at all where one of
// them got no reply, since that request may still land. Such a master
// votes no, and releaseWhereNotTaken releases this lock there, leaving the
// tombstone that turns the late request away. So a master that is slow,
// or lost a request, holds up only itself, never the hand-over on the
// others.
//
// A permit or a read hold is never handed over, nor handed to: their
// scripts take no key over from a token, and a waiter may take another
// free permit, or share the key with other readers, meanwhile.
func (l *Lock) handOver(ctx context.Context, obs *call) handOverResult {
	if l.req.owner != "" || l.req.permits > 0 || l.req.set != nil || l.Validity() <= 0 || !l.c.hub.waiting(l.req.key) {
		return notHandedOver
	}
	c := l.c
	w := c.hub.claim(l.req.key)
	if w == nil {
		return notHandedOver
	}
	// The waiter's place goes with the hand-over only where it has one on
	// the masters, which the key's passing then takes out; one that never
	// queued there need not start.
	at := w.placeNow()
	if at != nil && !at.sent.Load() {
		at = nil
	}
	a := c.attempt(ctx, l.req.key, w.ttl, w.lo, &takeOver{token: l.req.token, trail: l.trail}, at)
	result := notHandedOver
	if a.lock != nil {
		// Read, before the waiter has the lock, whether any master of its
		// quorum still held this token.
		result = handedOverFree
		for _, i := range a.lock.Granted() {
			if g, _, _ := a.lock.won.answer(i); g.grant.TookOver {
				result = handedOver
				break
			}
		}
		l.releaseWhereNotTaken(a.lock.won)
	}
	obs.observeHandOver(a, result)
	w.handed <- a.lock
	return result
}

// releaseWhereNotTaken releases this lock, handed over in round won, on
// each master where won did not grant the key: there the hand-over took
// nothing over, and this token may still hold the key until its TTL. Each
// master's release goes out once won's request there has returned, so
// that a hand-over landing there first finds this token still in place,
// and one landing after finds the key free; where won granted, the key
// passed on and needs nothing. It is the client's work until done: Close
// waits for it.
func (l *Lock) releaseWhereNotTaken(won round) {
	c := l.c
	timeout := c.nodeTimeout(l.req.ttl)
	for i := range c.nodes {
		c.work.add(1)
		won.res.Node(i).OnDone(func() {
			defer c.work.done()
			if a, _, _ := won.answer(i); a.err == nil && a.grant.OK {
				return
			}
			c.spawn(func() { l.releaseOn(context.Background(), i, timeout) })
		})
	}
}

// takeOver is the lock a hand-over takes over: on each master, its
// requests (trail) must land first, and the acquire replaces its token.
type takeOver struct {
	token string
	trail *trail
}

type handOverResult int8

const (
	notHandedOver  handOverResult = iota
	handedOver                    // the waiter holds the lock, taken over from this one
	handedOverFree                // the waiter holds the lock, but no master of its quorum held this one any more
)

// maxHandovers bounds how often a key passes straight between goroutines of
// this client before a plain release gives other clients' waiters their
// turn. The count lives with the line of waiters (queue.streak), and starts
// again when the line empties between two hand-overs.
const maxHandovers = 8

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
	w.unclaim()
	return l, true
}

// end marks the waiter's attempt over.
func (w *waiter) end() {
	w.h.mu.Lock()
	w.busy = false
	w.h.mu.Unlock()
}

// unclaim clears a claim whose outcome was taken.
func (w *waiter) unclaim() {
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
		w.unclaim()
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
	if w.busy || w.claimed || w.lo.owner != "" || w.lo.permits > 0 || w.lo.read {
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
