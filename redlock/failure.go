package redlock

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// misconfigured returns an ErrMisconfigured error when so many masters of
// the round failed in ways no retry fixes (an ACL, a password, a replica or
// a cluster member given as a master) that no quorum is possible without
// them: waiting for the lock would wait for ever.
func (c *Client) misconfigured(req request, r round) error {
	var addrs []string
	kinds := map[string]bool{}
	var order []string
	for i := range c.nodes {
		a, _, ok := r.answer(i)
		if !ok || a.err == nil || !permanent(a.err) {
			continue
		}
		addrs = append(addrs, c.nodes[i].addr())
		if k := failureKind(a.err); !kinds[k] {
			kinds[k] = true
			order = append(order, k)
		}
	}
	if len(addrs) <= len(c.nodes)-c.quorum {
		return nil
	}
	fixes := make([]string, len(order))
	for j, k := range order {
		fixes[j] = k + ": " + remedy(k)
		if k == "NOPERM" {
			fixes[j] += "; the lock's scripts touch " + c.touches(req)
		}
	}
	return fmt.Errorf("%w: %d of %d masters (%s) refuse the lock's commands, and no quorum is possible without them: %s",
		ErrMisconfigured, len(addrs), len(c.nodes), strings.Join(addrs, ", "), strings.Join(fixes, "; "))
}

// notObtained explains a failed attempt.
func (c *Client) notObtained(key string, last round, fenceErr error, quorum bool, elapsed, validity, timeout, window time.Duration) error {
	res := last.res
	var why string
	var quarantine error
	switch {
	case fenceErr != nil:
		why = fenceErr.Error()
	case quorum || res.OK():
		why = fmt.Sprintf("a quorum agreed but the attempt took %v, leaving validity %v", elapsed, validity)
	default:
		why = fmt.Sprintf("%d of %d masters granted it, %d needed", len(res.Yes), len(c.nodes), c.quorum)
		if len(res.Abstained) > 0 {
			why += fmt.Sprintf(", %d more kept out by the restart guard (restart quarantine, or a master it cannot trust)", len(res.Abstained))
			if len(res.Yes)+len(res.Abstained) >= c.quorum {
				quarantine = c.quarantined(key, res.Abstained, window)
			}
		}
		switch {
		case len(res.Pending) > 0 && elapsed >= timeout:
			why += fmt.Sprintf(", %d gave no reply within %v", len(res.Pending), timeout)
		case len(res.Pending) > 0:
			why += fmt.Sprintf(", %d had not answered when the quorum was out of reach", len(res.Pending))
		}
	}
	switch {
	case quarantine != nil && res.Err() != nil:
		return fmt.Errorf("%w: key %q: %s: %w: %w", ErrNotObtained, key, why, quarantine, res.Err())
	case quarantine != nil:
		return fmt.Errorf("%w: key %q: %s: %w", ErrNotObtained, key, why, quarantine)
	case res.Err() != nil:
		return fmt.Errorf("%w: key %q: %s: %w", ErrNotObtained, key, why, res.Err())
	}
	return fmt.Errorf("%w: key %q: %s", ErrNotObtained, key, why)
}

// quarantined explains why the masters given did not vote: each with the
// guard's reason (a restart, a promotion, an eviction policy, state it
// cannot read).
func (c *Client) quarantined(key string, masters []int, window time.Duration) error {
	now := c.o.clock.Now()
	why := make([]string, len(masters))
	for j, i := range masters {
		reason := c.nodes[i].health(key).distrust(now, window)
		if reason == "" {
			reason = "out of the quorum" // trusted again since the vote
		}
		why[j] = c.nodes[i].addr() + ": " + reason
	}
	return fmt.Errorf("%w: %s (guard window %v; a fresh cluster waits one window, and the window grows with the longest TTL this client used, see WithRestartGuard)",
		ErrQuarantined, strings.Join(why, "; "), window)
}

// expiryHint estimates when enough masters will be free for a quorum: just
// after the k-th soonest expiry among the refusing masters, where k is how
// many more free masters are needed. 0 means no estimate.
func (c *Client) expiryHint(r round) time.Duration {
	var ttls []time.Duration
	for _, i := range r.res.No {
		if r.refused(i) {
			a, _, _ := r.answer(i)
			switch d := a.grant.PTTL; {
			case d >= 0:
				ttls = append(ttls, d)
			case d == scripts.NoKey: // gone since: free now
				ttls = append(ttls, 0)
			default: // a key without a TTL: no estimate
				ttls = append(ttls, math.MaxInt64)
			}
		}
	}
	k := c.quorum - (len(c.nodes) - len(ttls))
	if k <= 0 || k > len(ttls) {
		return 0
	}
	slices.Sort(ttls)
	if d := ttls[k-1]; d != math.MaxInt64 {
		return d + time.Millisecond
	}
	return 0
}

func heldFor(pttl time.Duration) error {
	if pttl > 0 {
		return fmt.Errorf("%w (expires in %v)", ErrHeld, pttl)
	}
	return ErrHeld
}
