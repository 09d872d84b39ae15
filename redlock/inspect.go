package redlock

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/internal/fanout"
)

// Status is what the masters say about one key.
type Status struct {
	Key    string
	Quorum int
	Nodes  []NodeStatus
	// Holder is the holder a quorum of trusted masters agree on: the token of
	// a plain lock, "owner:<owner>" for a reentrant one. "" when none.
	Holder string
}

// Held reports whether a quorum of trusted masters agree on one holder.
func (s *Status) Held() bool { return s.Holder != "" }

// NodeStatus is one master's view of a key.
type NodeStatus struct {
	Node int
	Addr string
	// Err is why the master did not answer; the fields below are then zero.
	Err error
	// Holder is the token of a plain lock, "owner:<owner>" for a reentrant
	// one, "" when the key is free, or "?<type>" for a key of another kind.
	Holder string
	// Holds counts a reentrant lock's holds; 1 for a plain lock.
	Holds int
	// TTL is the key's remaining time to live (Redis PTTL): -1ms for a key
	// without expiry, -2ms for no key.
	TTL time.Duration
	// Fence is the key's fencing counter on this master.
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
	switch {
	case c == nil:
		return nil, invalid("nil client")
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
	res, err := fanOut(ctx, c, c.overMasters(0, c.o.nodeTimeout),
		func(ctx context.Context, i int) (keyState, fanout.Vote, error) {
			s, err := c.nodes[i].inspect(ctx, key)
			if err != nil {
				return keyState{}, fanout.No, err // the master's own error, for NodeStatus.Err
			}
			return s, fanout.Yes, nil
		})
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
		h := c.nodes[i].health()
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
			s := rep.Value
			ns.Holder, ns.Holds, ns.TTL, ns.Fence = s.holder, s.holds, s.pttl, s.counter
			if s.holder != "" && !ns.Quarantined {
				votes[s.holder]++
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
