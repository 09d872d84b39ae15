package redlock

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
)

// place is a Lock call's place in its key's waiting queue on the masters
// (see The queue in internal/scripts/acquire.lua). A master grants a free
// key only to its queue's head, so that waiters of every client take the
// key in turn, and a release wakes the head alone: it announces the head's
// id, which only the client waiting with that place acts on.
//
// The ticket orders the places: the client's clock, in microseconds, when
// the call began, the same on every master, so that masters holding the
// same waiters order them alike. Waiters of different clients are served
// in the order their calls began, within the skew of the clients' clocks.
//
// A place lasts the client's queue lease on each master, and the waiter
// renews it with each attempt, every lease/3 at least. A waiter whose last
// round was answered by fewer voting masters than a quorum does not renew
// (see Client.Lock and voters): cut off in a minority, it cannot take the
// key, and its places there end with their leases instead of holding up
// the waiters behind it. So a dead or cut-off waiter holds up the queue at
// most one lease after its last renewal.
type place struct {
	id     string
	ticket int64
	sent   atomic.Bool // an acquire queuing at this place was sent: it may be queued
	// idle: the waiter does not renew its place (the minority rule). Its
	// acquires still name it, so that where it heads a queue it may take
	// the key, but they queue it nowhere.
	idle atomic.Bool
}

// newPlace returns a place for a Lock call that begins now.
func (c *Client) newPlace() (*place, error) {
	id, err := c.token()
	if err != nil {
		return nil, err
	}
	return &place{id: id, ticket: c.o.clock.Now().UnixMicro()}, nil
}

// queueAt sets req to queue at p: to take the key
// where p heads the queue, and, unless p is idle, to join or renew p where
// refused.
func (c *Client) queueAt(req *request, p *place) {
	req.waiter = p.id
	if !p.idle.Load() {
		req.ticket, req.lease = p.ticket, c.o.queueLease
		p.sent.Store(true)
	}
}

// inLine reads where waiter stands in the masters' queues after round r.
// behind: other waiters head the queue on so many masters that it cannot
// win a quorum before they go; it waits for the release that names it, or
// renews its place. first: it heads the queue on a quorum of masters, so
// only the holder stands between it and the key; it waits for the release
// that names it, or the holder's TTL. far: it stands behind at least two
// others on a quorum of masters, so that no release can name it in the
// next round trip or so.
func (c *Client) inLine(r round, waiter string) (behind, first, far bool) {
	others, heads, deep := 0, 0, 0
	for i := range r.res.Nodes() {
		a, _, ok := r.answer(i)
		if !ok || a.err != nil || a.grant.OK || a.grant.Head == "" {
			continue
		}
		if a.grant.Head == waiter {
			heads++
		} else {
			others++
		}
		if a.grant.Rank >= 2 {
			deep++
		}
	}
	q := r.res.Need()
	return others > len(c.nodes)-q, waiter != "" && heads >= q, deep >= q
}

// voters counts the masters that answered round r, granting or refusing,
// and whose votes count in this client's view (see Client.vote): the
// minority rule's measure of whether the waiter reaches a quorum. A master
// the restart guard keeps out answers but cannot help the waiter win, and
// a waiter that counted it could keep heading the queues of the masters it
// reaches, and hold up one that reaches a quorum of voters, for as long as
// the master is kept out.
func (c *Client) voters(r round, key string, window time.Duration) int {
	n := 0
	for i := range r.res.Nodes() {
		a, v, ok := r.answer(i)
		switch {
		case !ok || a.err != nil:
		case a.grant.OK && v == fanout.Yes, !a.grant.OK && c.vote(i, key, window) == fanout.Yes:
			n++
		}
	}
	return n
}

// leave takes a finished Lock call's place out of the masters' queues
// where it may remain: on every master but those that granted the lock l
// the call got (nil for none), which took it out themselves. A master of
// l's winning round still to answer is left once it has: only if it did
// not grant. It runs in the background, one node timeout a master, and is
// not retried: a place left behind ends with its lease. Close waits for
// it.
func (c *Client) leave(key string, p *place, l *Lock) {
	if p == nil || !p.sent.Load() {
		return
	}
	for i := range c.nodes {
		if l != nil && slices.Contains(l.granted, i) {
			continue
		}
		c.spawn(func() {
			if l != nil {
				<-l.won.res.Done(i)
				if a, _, _ := l.won.answer(i); a.err == nil && a.grant.OK {
					return
				}
			}
			ctx, cancel := c.o.clock.WithTimeout(context.Background(), c.o.nodeTimeout)
			defer cancel()
			if err := c.nodes[i].leave(ctx, key, p.id, c.o.queueLease); err != nil {
				c.o.logger.Debug("redlock: leaving the waiting queue failed; the place ends with its lease",
					"addr", c.nodes[i].addr(), "key", key, "err", err)
			}
		})
	}
}
