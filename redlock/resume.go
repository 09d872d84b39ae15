package redlock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock"
	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// Resume rebuilds the handle of a lock that another process or client
// took, from its key and Token: the taker hands the job over, and this
// client extends and releases the lock. For a hold of a reentrant lock,
// pass the owner with WithOwner. WithAutoExtend works as for Lock. ttl is
// what later extensions (and the watchdog) set: the masters do not keep the
// TTL the lock was taken with.
//
// Resume reads every master in parallel, changing nothing, waits for each
// up to the node timeout, and counts the masters whose votes the restart
// guard counts where the token still holds the key. With a quorum of them,
// it returns a *Lock like an acquired one: Extend, Release, Done, Err and
// the watchdog work the same. Its validity ends when the key's remaining
// TTL on the quorum-th of those masters (taking the longest first) runs
// out, counted from when the read began, less the drift reserve on that
// TTL. Granted lists those masters.
//
// Fence is the fence the lock was taken with (for a hold of a reentrant
// lock, the lock's: the largest of its holds' fences), which each master
// that granted it records beside the key: the
// one fence a quorum of those masters record. Where no quorum agrees (the
// key was lost and taken back on some master since, or the record was
// lost), it is the largest fence those masters report, never below the
// lock's, and lagging masters are raised to it, as an acquisition raises
// them: a later holder's fence is larger still (see docs/guarantees.md).
//
// With fewer such masters, or no validity left, the error wraps
// ErrLockNotHeld and says how many masters held the token; it wraps
// ErrQuarantined too when masters the restart guard does not count would
// have made the quorum, and ErrMisconfigured when masters refuse the
// lock's commands. The error is an *AttemptError. Bad input (an empty key
// or token, a reserved key, a ttl out of range) gives ErrInvalid.
//
// Two handles on one token are one lock: a release or loss seen by either
// holds for both. The processes must agree which of them acts on the
// resource.
func (c *Client) Resume(ctx context.Context, key, token string, ttl time.Duration, opts ...LockOption) (_ *Lock, err error) {
	if token == "" {
		return nil, invalid("empty token")
	}
	ttl, lo, err := c.startLockCall(ctx, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	defer c.work.done()
	ctx, obs := c.begin(ctx, OpResume, key)
	defer obs.end(&err)
	req := request{key: key, token: token, owner: lo.owner, ttl: ttl, keep: c.o.fenceKeep}
	c.noteTTL(ttl)
	window := c.guardWindow()
	timeout := c.nodeTimeout(ttl)

	start := c.o.clock.Now()
	r, err := c.readHold(ctx, req, window, timeout)
	if err != nil {
		return nil, err
	}
	if len(r.res.Yes) < c.quorum {
		return nil, c.notResumed(ctx, req, r, nil, 0, timeout, window)
	}
	fence, agreed := recorded(r, c.quorum)
	var raised []int
	var fenceErr error
	if !agreed {
		fence, raised, fenceErr = c.chooseFence(ctx, req, r, timeout)
		c.reportFenceRaise(ctx, key, c.noteFence(r, raised, fenceErr))
	}
	until := start.Add(quorumlock.Validity(quorumTTL(r, c.quorum), 0, c.o.drift))
	validity := until.Sub(c.o.clock.Now())
	if fenceErr != nil || validity <= 0 {
		return nil, c.notResumed(ctx, req, r, fenceErr, validity, timeout, window)
	}
	// Nothing this call sent can take the key: the read writes nothing, and
	// a raise changes counters only where the token holds the key. So a
	// release has nothing of it to wait for: the trail starts empty.
	return c.newLock(req, lo, fence, until, r, newTrail(len(c.nodes), nil), raised), nil
}

// readHold asks every master whether req's token (a hold of its owner, for
// a reentrant lock) holds its key, changing nothing: a round as an
// acquisition's, in which a master that holds the token grants it, with its
// fence record and the key's remaining TTL, and votes as the restart guard
// says. It waits for every master, so that the fence a quorum records is
// seen wherever it is.
func (c *Client) readHold(ctx context.Context, req request, window, timeout time.Duration) (round, error) {
	res, err := fanout.Run(ctx, c.overMasters(0, timeout), each(len(c.nodes),
		func(ctx context.Context, i int, p *pending[scripts.State]) {
			c.nodes[i].startInspect(ctx, req.key, req.token, req.owner, p)
		},
		func(i int, s scripts.State, err error) (ask, fanout.Vote, error) {
			if err != nil {
				return ask{err: err}, fanout.No, c.nodeErr(i, err)
			}
			g := scripts.Grant{OK: s.Held, PTTL: s.PTTL, Counter: s.Counter, Holder: s.Holder}
			if !s.Held {
				return ask{grant: g}, fanout.No, c.nodeErr(i, ErrLockNotHeld)
			}
			return ask{grant: g}, c.vote(i, req.key, window), nil
		}))
	return round{res}, err
}

// recorded returns the fence that a quorum of r's voting masters record,
// and whether there is one. At most one value can be: two quorums meet.
// The acquisition left the lock's fence on a quorum (the masters whose
// count was the fence, and those raised to it), and a record only rises
// from there: so a value on a quorum is at least the lock's fence, and
// each master of that quorum counts above it next.
func recorded(r round, quorum int) (int64, bool) {
	seen := map[int64]int{}
	for _, i := range r.res.Yes {
		a, _, _ := r.answer(i)
		if seen[a.grant.Counter]++; seen[a.grant.Counter] >= quorum {
			return a.grant.Counter, true
		}
	}
	return 0, false
}

// quorumTTL is the key's remaining TTL on the quorum-th of r's voting
// masters, the longest first: until then a quorum still holds the key, by
// the masters' clocks.
func quorumTTL(r round, quorum int) time.Duration {
	ttls := make([]time.Duration, 0, len(r.res.Yes))
	for _, i := range r.res.Yes {
		a, _, _ := r.answer(i)
		ttls = append(ttls, max(a.grant.PTTL, 0))
	}
	if len(ttls) < quorum {
		return 0
	}
	slices.Sort(ttls)
	return ttls[len(ttls)-quorum]
}

// notResumed is the error of a Resume that found no quorum holding the
// token, no validity left, or could not raise the fence (fenceErr), written
// from one tally of the read once every master answered or timed out. A
// read cut short by ctx says so, and not that the lock is not held.
func (c *Client) notResumed(ctx context.Context, req request, r round, fenceErr error, validity, timeout, window time.Duration) error {
	waitAll(c.o.clock, r.res, timeout)
	ms := c.outcomes(r, req.key, window)
	for j := range ms {
		if ms[j].Answer == MasterHeld { // the read refuses only where the token is not
			ms[j].Answer = MasterNotHeld
		}
	}
	e := &AttemptError{Op: "resume", Key: req.key, Quorum: c.quorum, Masters: ms, head: "redlock: not resumed"}
	t := tallied(ms)
	n := len(ms)
	switch mis, kinds := misconfigured(ms, c.quorum); {
	case ctx.Err() != nil && fenceErr == nil && len(r.res.Yes) < c.quorum:
		e.cause = fmt.Sprintf("%d of %d masters hold the token and count, %d needed", t[MasterAgreed], n, c.quorum)
		e.ended = context.Cause(ctx)
	case mis > 0:
		e.wraps = []error{ErrMisconfigured}
		e.cause = fmt.Sprintf("%d of %d masters refuse the lock's commands (%s): %s", mis, n, strings.Join(kinds, ", "), c.briefRemedy(kinds[0]))
		e.Fix = c.fix(req, kinds)
	case fenceErr != nil:
		e.wraps = []error{ErrLockNotHeld}
		e.cause = fenceErr.Error()
	case len(r.res.Yes) >= c.quorum:
		e.wraps = []error{ErrLockNotHeld}
		e.cause = fmt.Sprintf("a quorum holds the token, leaving validity %v", roughly(validity))
	default:
		e.wraps = []error{ErrLockNotHeld}
		e.cause = fmt.Sprintf("%d of %d masters hold the token and count, %d needed: %s", t[MasterAgreed], n, c.quorum, obstacles(ms, timeout, "do not hold it"))
		if t[MasterAbstained] > 0 && t[MasterAgreed]+t[MasterAbstained] >= c.quorum {
			e.wraps = append(e.wraps, ErrQuarantined)
		}
	}
	e.wraps = append(e.wraps, nodeErrs(ms)...)
	return e
}
