package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/internal/fanout"
)

// settleFence chooses the fence and makes it stick.
//
// Each master counts the grants of a key. The fence is the largest count
// among the quorum that granted this attempt. That alone is not monotonic:
// two quorums can see counters far apart, and the largest of a later quorum
// may be smaller. So every member of the quorum whose counter lags is raised
// to the fence, owner-checked, before the lock is handed out. Then a quorum W
// holds counters >= fence while this token holds the key there. The next
// holder's quorum overlaps W in some master, which it can only grant once
// this token's key is gone there, so after the raise; its counter there, and
// so its fence, is larger. This holds while no master loses its data or has
// it replaced by an older copy. A master that comes back empty starts its
// counters from its clock; one whose data was replaced (a replica promoted
// in a failover, a restart from an RDB or AOF file) is found out by the
// acquire script before any counter of it counts, and starts a new epoch
// from its clock: see fenceEpoch in scripts/lib.lua for how, and for the
// proof that fences keep growing across it.
//
// In the common case every master of the quorum reports the same count, and
// no extra round trip is made. raised lists the masters whose counters were
// raised to the fence here: Release need not raise them again.
func (c *Client) settleFence(ctx context.Context, req request, won round, timeout time.Duration) (int64, []int, error) {
	counter := func(i int) int64 {
		a, _, _ := won.answer(i) // a yes vote: in
		return a.grant.counter
	}
	yes := won.res.Yes
	var fence int64 // read by the raises, stragglers too: never written after they start
	for _, i := range yes {
		fence = max(fence, counter(i))
	}
	var lag []int
	for _, i := range yes {
		if counter(i) < fence {
			lag = append(lag, i)
		}
	}
	atFence := len(yes) - len(lag)
	if atFence >= c.quorum {
		return fence, nil, nil
	}
	need := c.quorum - atFence
	res, err := fanOut(ctx, c, fanout.Config{Nodes: len(lag), Need: need, Timeout: timeout, Clock: c.o.clock},
		func(ctx context.Context, j int) (struct{}, fanout.Vote, error) {
			i := lag[j]
			ok, err := c.nodes[i].raiseFence(ctx, req, fence)
			switch {
			case err != nil:
				return struct{}{}, fanout.No, c.nodeErr(i, err)
			case !ok:
				return struct{}{}, fanout.No, c.nodeErr(i, ErrLockNotHeld)
			}
			return struct{}{}, fanout.Yes, nil
		})
	if err != nil {
		return 0, nil, err
	}
	if !res.OK() {
		return 0, nil, fmt.Errorf("fence %d reached %d of the %d lagging masters, %d needed", fence, len(res.Yes), len(lag), need)
	}
	var raised []int
	for _, j := range res.Yes {
		raised = append(raised, lag[j])
	}
	return fence, raised, nil
}
