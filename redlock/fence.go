package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock"
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
// no extra round trip is made.
func (c *Client) settleFence(ctx context.Context, req request, res *quorumlock.Result, grants []grant, timeout time.Duration) (int64, error) {
	var fence int64
	for _, i := range res.Yes {
		fence = max(fence, grants[i].counter)
	}
	var lag []int
	for _, i := range res.Yes {
		if grants[i].counter < fence {
			lag = append(lag, i)
		}
	}
	atFence := len(res.Yes) - len(lag)
	if atFence >= c.quorum {
		return fence, nil
	}
	need := c.quorum - atFence
	raised, err := c.fanOut(ctx, quorumlock.FanOut{Nodes: len(lag), Need: need, Timeout: timeout, Clock: c.o.clock},
		func(ctx context.Context, j int) (quorumlock.Vote, error) {
			i := lag[j]
			ok, err := c.nodes[i].raiseFence(ctx, req, fence)
			switch {
			case err != nil:
				return quorumlock.No, c.nodeErr(i, err)
			case !ok:
				return quorumlock.No, c.nodeErr(i, ErrLockNotHeld)
			}
			return quorumlock.Yes, nil
		})
	if err != nil {
		return 0, err
	}
	if !raised.OK() {
		return 0, fmt.Errorf("fence %d reached %d of the %d lagging masters, %d needed", fence, len(raised.Yes), len(lag), need)
	}
	for _, j := range raised.Yes {
		grants[lag[j]].counter = fence // Release need not raise it again
	}
	return fence, nil
}
