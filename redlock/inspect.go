package redlock

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// Status is what the masters say about one key.
type Status struct {
	// Key is the key asked about.
	Key string
	// Quorum is how many trusted masters must agree on a holder.
	Quorum int
	// Nodes holds each master's view, in the order the client was given
	// the masters.
	Nodes []NodeStatus
	// Holder is the holder a quorum of trusted masters agree on: the token of
	// a plain lock, "owner:" and the owner for a reentrant one. "" when none.
	Holder string
}

// Held reports whether a quorum of trusted masters agree on one holder.
func (s *Status) Held() bool { return s.Holder != "" }

// NodeStatus is one master's view of a key.
type NodeStatus struct {
	// Node is the master's index in the list the client was given.
	Node int
	// Addr is the master's address.
	Addr string
	// Err is why the master did not answer; the fields below are then zero.
	Err error
	// Holder is who holds the key on this master: the token of a plain
	// lock, "owner:" and the owner for a reentrant one, "" when the key is
	// free. A key that no lock wrote, such as a list, shows as "?" and its
	// Redis type: "?list".
	Holder string
	// Holds counts a reentrant lock's holds; 1 for a plain lock.
	Holds int
	// TTL is the time the key has left on this master. It is negative when
	// nothing will expire: -2ms when the master has no such key, -1ms for a
	// key without a TTL, which no lock leaves.
	TTL time.Duration
	// Fence is the fence the lock holding the key recorded on this master
	// (its grant's count, or the fence it was raised to), or else the
	// master's fence floor: either way, the next grant of the key there
	// counts above it.
	Fence int64
	// Quarantined is true while the guard does not count the master's vote.
	Quarantined bool
	// Distrust says why, when Quarantined: a restart or a promotion within
	// the guard window, a replica, a master that may evict lock keys, one
	// whose state cannot be read.
	Distrust string
	// Uptime is how long the master has been up, when the guard knows it.
	Uptime time.Duration
}

// Inspect asks every master about key, changing nothing, and waits for all
// of them up to the node timeout.
func (c *Client) Inspect(ctx context.Context, key string) (*Status, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	switch {
	case ctx == nil:
		return nil, invalid("nil context")
	case key == "":
		return nil, invalid("empty key")
	}
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.work.done()
	n := len(c.nodes)
	st := &Status{Key: key, Quorum: c.quorum, Nodes: make([]NodeStatus, n)}
	res, err := fanout.Run(ctx, c.overMasters(0, c.o.nodeTimeout), each(n,
		func(ctx context.Context, i int, p *pending[scripts.State]) {
			c.nodes[i].startInspect(ctx, key, "", "", p)
		},
		func(i int, s scripts.State, err error) (scripts.State, fanout.Vote, error) {
			if err != nil {
				return scripts.State{}, fanout.No, err // the master's own error, for NodeStatus.Err
			}
			return s, fanout.Yes, nil
		}))
	if err != nil {
		return nil, err
	}
	answered := make([]bool, n)
	for _, i := range res.Yes {
		answered[i] = true
	}
	for _, i := range res.No {
		answered[i] = true
	}
	window := c.guardWindow()
	now := c.o.clock.Now()
	votes := map[string]int{}
	for i := range n {
		ns := NodeStatus{Node: i, Addr: c.nodes[i].addr()}
		h := c.nodes[i].health(key)
		if h.known {
			ns.Uptime = now.Sub(h.startedAt).Truncate(time.Second)
		}
		ns.Distrust = h.distrust(now, window)
		ns.Quarantined = ns.Distrust != ""
		rep, _ := res.Reply(i)
		switch {
		case !answered[i]:
			ns.Err = errNoReply
		case rep.Err != nil:
			ns.Err = rep.Err
		default:
			// As internal/scripts/inspect.lua reports them: TTL is Redis's PTTL, and
			// Fence falls back to the master's fence floor (or 0) when the
			// key has no counter.
			s := rep.Value
			ns.Holder, ns.Holds, ns.TTL, ns.Fence = s.Holder, s.Holds, s.PTTL, s.Counter
			if s.Holder != "" && !ns.Quarantined {
				votes[s.Holder]++
			}
		}
		st.Nodes[i] = ns
	}
	for h, v := range votes {
		if v >= c.quorum {
			st.Holder = h
		}
	}
	return st, nil
}
