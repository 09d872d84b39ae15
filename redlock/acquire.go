package redlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock"
)

// TryLock makes one attempt to take key for ttl on a quorum of masters.
//
// It returns ErrNotObtained if no quorum granted the lock, or if the time the
// attempt took left no validity; the error also wraps each master's
// *NodeError. Nothing of a failed attempt is left on any master that can be
// reached: TryLock deletes its token everywhere it may have landed, and waits
// up to one node timeout for that.
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	ttl, err := c.check(ctx, key, ttl)
	if err != nil {
		return nil, err
	}
	lo, err := lockOpts(opts)
	if err != nil {
		return nil, err
	}
	a := c.attempt(ctx, key, ttl, lo)
	if a.err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%w: %w", a.err, context.Cause(ctx))
	}
	return a.lock, a.err
}

// Lock takes key for ttl, retrying until it has the lock or ctx is done.
//
// Between attempts it waits for the holder's release to be announced, which
// wakes it at once; if no announcement comes (a master down, a lock that
// expired rather than being released) it retries after the WithRetry backoff,
// or sooner when the holder's TTL runs out first. Goroutines of one Client
// waiting for the same key take turns in arrival order.
//
// When ctx ends first, the error satisfies both errors.Is(err,
// ErrNotObtained) and errors.Is(err, ctx.Err()).
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	ttl, err := c.check(ctx, key, ttl)
	if err != nil {
		return nil, err
	}
	lo, err := lockOpts(opts)
	if err != nil {
		return nil, err
	}
	// Goroutines of this client already waiting for the key go first: a
	// newcomer joins the line instead of splitting the votes with its head.
	// An owner may already hold the key, so it always tries at once.
	a := outcome{err: fmt.Errorf("%w: key %q: waiting in line", ErrNotObtained, key)}
	if lo.owner != "" || !c.hub.waiting(key) {
		a = c.attempt(ctx, key, ttl, lo)
		if a.err == nil || !errors.Is(a.err, ErrNotObtained) {
			return a.lock, a.err
		}
	}
	w := c.hub.join(key)
	acquired := false
	defer func() { w.leave(acquired) }()
	// Announcements are heard from here on, so an immediate retry closes
	// the gap between the first attempt and the subscription.
	w.ready(ctx, c.nodeTimeout(ttl))
	w.poke()
	for n := 1; ; n++ {
		delay, ok := c.o.retry.Delay(n)
		if !ok {
			return nil, a.err
		}
		if a.hint > 0 && a.hint < delay {
			delay = a.hint
		}
		if w.deafSpell() {
			// A release now could go unheard: poll until the subscription is confirmed.
			delay = min(delay, c.nodeTimeout(ttl))
		}
		if a.split {
			// Several waiters each won a minority: none holds the lock, and the
			// rollbacks are done. Retry at once, spread by a little jitter.
			delay = rand.N(c.nodeTimeout(ttl)/10 + time.Millisecond)
		}
		if err := w.wait(ctx, delay); err != nil {
			if errors.Is(err, ErrClosed) {
				return nil, err
			}
			return nil, errors.Join(ErrNotObtained, err, a.err)
		}
		a = c.attempt(ctx, key, ttl, lo)
		if a.err == nil {
			acquired = true
			return a.lock, nil
		}
		if !errors.Is(a.err, ErrNotObtained) {
			return nil, a.err
		}
	}
}

// outcome is the result of one attempt.
type outcome struct {
	lock  *Lock
	err   error
	hint  time.Duration // when the holder's keys will have expired on enough masters; 0 if unknown
	split bool          // nobody holds a quorum: the votes were split or left over
}

// attempt is one round of the algorithm: fan the acquire out to every master,
// stop at quorum, settle the fence, check the validity, and on failure roll
// back everywhere the token may have landed.
func (c *Client) attempt(ctx context.Context, key string, ttl time.Duration, lo lockOptions) outcome {
	token, err := c.token()
	if err != nil {
		return outcome{err: err}
	}
	req := request{key: key, token: token, owner: lo.owner, ttl: ttl, keep: c.o.fenceKeep}.withArgv()
	c.noteTTL(ttl)
	window := c.guardWindow()
	timeout := c.nodeTimeout(ttl)
	n := len(c.nodes)
	grants := make([]grant, n)
	refused := make([]bool, n)

	start := c.o.clock.Now()
	res, err := quorumlock.FanOut{Nodes: n, Need: c.quorum, Timeout: timeout, Clock: c.o.clock}.Run(ctx,
		func(ctx context.Context, i int) (quorumlock.Vote, error) {
			g, err := c.nodes[i].acquire(ctx, req)
			if err != nil {
				return quorumlock.No, c.nodeErr(i, err)
			}
			grants[i] = g
			if !g.ok {
				refused[i] = true
				return quorumlock.No, c.nodeErr(i, heldFor(g.pttl))
			}
			return c.vote(i, window), nil
		})
	if err != nil {
		return outcome{err: err}
	}
	var fence int64
	ok := res.OK()
	var fenceErr error
	if ok {
		fence, fenceErr = c.settleFence(ctx, req, res, grants, timeout)
		ok = fenceErr == nil
	}
	elapsed := c.o.clock.Since(start)
	validity := quorumlock.Validity(ttl, elapsed, c.o.drift)
	if ok && validity > 0 {
		until := start.Add(ttl - c.o.drift.Reserve(ttl))
		return outcome{lock: c.newLock(req, lo, fence, until, res, grants)}
	}
	c.rollback(req, res, refused, timeout)

	var why string
	switch {
	case fenceErr != nil:
		why = fenceErr.Error()
	case ok || res.OK():
		why = fmt.Sprintf("a quorum agreed but the attempt took %v, leaving validity %v", elapsed, validity)
	default:
		why = fmt.Sprintf("%d of %d masters granted it, %d needed", len(res.Yes), n, c.quorum)
		if len(res.Abstained) > 0 {
			why += fmt.Sprintf(", %d more in restart quarantine", len(res.Abstained))
		}
		switch {
		case len(res.Pending) > 0 && elapsed >= timeout:
			why += fmt.Sprintf(", %d gave no reply within %v", len(res.Pending), timeout)
		case len(res.Pending) > 0:
			why += fmt.Sprintf(", %d had not answered when the quorum was out of reach", len(res.Pending))
		}
	}
	// Only masters that answered are read: a straggler may still be writing.
	refusals := 0
	for _, i := range res.No {
		if refused[i] {
			refusals++
		}
	}
	out := outcome{hint: c.expiryHint(res, grants, refused)}
	// A split vote: contenders each took a minority. Enough masters answered
	// for a quorum to have been possible, some for us and some for others,
	// yet no single holder has a quorum. Masters that failed or are slow
	// (an outage) are not a split: those wait for the backoff.
	granted := len(res.Yes) + len(res.Abstained)
	out.split = granted > 0 && refusals > 0 && refusals < c.quorum && granted+refusals >= c.quorum
	if res.Err != nil {
		out.err = fmt.Errorf("%w: key %q: %s: %w", ErrNotObtained, key, why, res.Err)
	} else {
		out.err = fmt.Errorf("%w: key %q: %s", ErrNotObtained, key, why)
	}
	return out
}

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
// so its fence, is larger. This holds while no master loses its data, which
// the restart guard covers as for mutual exclusion.
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
	raised, err := quorumlock.FanOut{Nodes: len(lag), Need: need, Timeout: timeout, Clock: c.o.clock}.Run(ctx,
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

// rollback deletes the attempt's token on every master it may have reached:
// those that said yes or abstained, those that failed, and those still
// outstanding, each once its acquire has returned, so a late yes is undone
// too. Where the token is not found, a tombstone for it stays for one TTL,
// so that an acquire still in the network cannot land afterwards. A
// roll-back announces nothing: the lock was never held. It waits up to one
// node timeout; what is left finishes in the background and Close waits
// for it.
func (c *Client) rollback(req request, res *quorumlock.Result, refused []bool, timeout time.Duration) {
	answered := make([]bool, len(c.nodes))
	for _, i := range res.No {
		answered[i] = true
	}
	var targets []int
	for i := range c.nodes {
		if !(answered[i] && refused[i]) {
			targets = append(targets, i)
		}
	}
	if len(targets) == 0 {
		return
	}
	req = req.withArgv()
	req.rollback = true
	finished := make(chan struct{}, len(targets))
	for _, i := range targets {
		c.bg.Add(1)
		go func() {
			defer c.bg.Done()
			defer func() { finished <- struct{}{} }()
			<-res.Done(i)
			if refused[i] { // a straggler that turned out to be a refusal
				return
			}
			ctx, cancel := c.o.clock.WithTimeout(context.Background(), timeout)
			defer cancel()
			if _, err := c.nodes[i].release(ctx, req); err != nil {
				c.o.logger.Debug("redlock: rollback failed; the key expires with its TTL",
					"addr", c.nodes[i].addr(), "key", req.key, "err", err)
			}
		}()
	}
	t := c.o.clock.NewTimer(timeout)
	defer t.Stop()
	for range targets {
		select {
		case <-finished:
		case <-t.C():
			return
		}
	}
}

// expiryHint estimates when enough masters will be free for a quorum: just
// after the k-th soonest expiry among the refusing masters, where k is how
// many more free masters are needed. 0 means no estimate.
func (c *Client) expiryHint(res *quorumlock.Result, grants []grant, refused []bool) time.Duration {
	var ttls []time.Duration
	for _, i := range res.No {
		if refused[i] {
			switch d := grants[i].pttl; {
			case d >= 0:
				ttls = append(ttls, d)
			case d == -2*time.Millisecond: // gone since: free now
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
