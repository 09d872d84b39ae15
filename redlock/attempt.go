package redlock

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock"
	"github.com/quorumlock/quorumlock/internal/fanout"
)

// maxKeepRounds bounds how often the winner of a split vote asks the masters
// again before it gives up and rolls back.
const maxKeepRounds = 3

// outcome is the result of one attempt.
type outcome struct {
	lock  *Lock
	err   error
	hint  time.Duration // when the holder's keys will have expired on enough masters; 0 if unknown
	split bool          // nobody holds a quorum: retry soon, with jitter
}

// round is one fan-out of the acquire script with the attempt's token: each
// master's answer and vote, once it is in.
type round struct{ res *fanout.Result[ask] }

// ask is one master's answer to the acquire script in a round.
type ask struct {
	grant grant
	err   error // why the master failed; nil when it granted or refused
}

// answer returns master i's answer and vote, and false while it is not in.
func (r round) answer(i int) (ask, fanout.Vote, bool) {
	rep, ok := r.res.Reply(i)
	return rep.Value, rep.Vote, ok
}

// refused reports whether master i has answered that another holds the key.
func (r round) refused(i int) bool {
	a, _, ok := r.answer(i)
	return ok && a.err == nil && !a.grant.ok
}

// roundCount counts what every master that has answered said.
type roundCount struct{ yes, abstained, refused, failed, silent int }

func (r round) count() roundCount {
	var t roundCount
	for i := range r.res.Nodes() {
		a, v, ok := r.answer(i)
		switch {
		case !ok:
			t.silent++
		case a.err != nil:
			t.failed++
		case !a.grant.ok:
			t.refused++
		case v == fanout.Yes:
			t.yes++
		default:
			t.abstained++
		}
	}
	return t
}

// hearOut waits, at most d, for masters still silent after a round that
// failed with some votes: a split vote can be judged only on every answer.
func (c *Client) hearOut(r round, d time.Duration) {
	t := c.o.clock.NewTimer(d)
	defer t.Stop()
	for i := range r.res.Nodes() {
		select {
		case <-r.res.Done(i):
		case <-t.C():
			return
		}
	}
}

// attempt runs the algorithm once: fan the acquire out to every master, stop
// at quorum, settle the fence, check the validity, and on failure roll back
// everywhere the token may have landed.
//
// When contenders split the votes, the one with the most (ties to the
// smaller token) keeps its grants and asks the other masters again a moment
// later, as the others roll back and wait for its release: a split is
// resolved in a round trip or two rather than by jitter alone. The validity
// still counts from the first round.
func (c *Client) attempt(ctx context.Context, key string, ttl time.Duration, lo lockOptions) outcome {
	token, err := c.token()
	if err != nil {
		return outcome{err: err}
	}
	req := request{key: key, token: token, owner: lo.owner, ttl: ttl, keep: c.o.fenceKeep, from: lo.from}.withArgv()
	c.noteTTL(ttl)
	window := c.guardWindow()
	timeout := c.nodeTimeout(ttl)

	start := c.o.clock.Now()
	var rounds []round
	kept := false
	for {
		r, err := c.acquireRound(ctx, req, window, timeout, lo.after)
		if err != nil {
			return outcome{err: err}
		}
		rounds = append(rounds, r)
		if !r.res.OK() && len(r.res.Yes) > 0 {
			c.hearOut(r, timeout/5)
		}
		if r.res.OK() || len(rounds) > maxKeepRounds || !c.wonSplit(r, token) ||
			quorumlock.Validity(ttl, c.o.clock.Since(start)+timeout, c.o.drift) <= 0 {
			break
		}
		kept = true
		if !c.sleep(ctx, time.Duration(len(rounds))*max(timeout/50, 500*time.Microsecond)) {
			break
		}
	}
	last := rounds[len(rounds)-1]

	var fence int64
	var raised []int
	ok := last.res.OK()
	var fenceErr error
	if ok {
		fence, raised, fenceErr = c.settleFence(ctx, req, last, timeout)
		ok = fenceErr == nil
	}
	elapsed := c.o.clock.Since(start)
	validity := quorumlock.Validity(ttl, elapsed, c.o.drift)
	if ok && validity > 0 {
		until := start.Add(ttl - c.o.drift.Reserve(ttl))
		return outcome{lock: c.newLock(req, lo, fence, until, rounds, raised)}
	}
	c.rollback(req, rounds, timeout, start.Add(ttl))

	out := outcome{hint: c.expiryHint(last)}
	t := last.count()
	granted := t.yes + t.abstained
	split := granted > 0 && t.refused > 0 && t.refused < c.quorum && granted+t.refused >= c.quorum
	switch {
	case kept || c.wonSplit(last, token):
		// This attempt won the split but the others' masters did not come
		// free in time; they have rolled back: try again soon.
		out.split = true
	case split && granted+t.refused < len(c.nodes):
		// A split seen only in part: nobody can know the winner, so all
		// roll back and retry soon, spread by jitter.
		out.split = true
	case split:
		// A split this attempt lost: the winner keeps its grants and asks
		// again; wait for its release, or the backoff.
	}
	out.err = c.notObtained(key, last, fenceErr, ok, elapsed, validity, timeout, window)
	if mis := c.misconfigured(req, last); mis != nil {
		out.err = fmt.Errorf("%w: %w", mis, out.err)
	}
	return out
}

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

// acquireRound fans the acquire script out once. On each master it first
// waits for the requests of after (a hand-over waits for every request of
// the lock it takes over, as a release does).
func (c *Client) acquireRound(ctx context.Context, req request, window, timeout time.Duration, after *trail) (round, error) {
	res, err := fanOut(ctx, c, c.overMasters(c.quorum, timeout),
		func(ctx context.Context, i int) (ask, fanout.Vote, error) {
			if after != nil {
				if _, err := after.settle(ctx, i); err != nil {
					return ask{err: err}, fanout.No, c.nodeErr(i, err)
				}
			}
			g, err := c.nodes[i].acquire(ctx, req)
			if err != nil {
				return ask{err: err}, fanout.No, c.nodeErr(i, err)
			}
			if !g.ok {
				return ask{grant: g}, fanout.No, c.nodeErr(i, heldFor(g.pttl))
			}
			return ask{grant: g}, c.vote(i, window), nil
		})
	return round{res}, err
}

// wonSplit decides whether this attempt won a split vote: every master
// answered, some for it and the rest for other tokens, none of which has as
// many votes (a tie goes to the smaller token). Each master holds one token,
// so every contender that heard from every master sees the same counts and
// reaches the same verdict. With a master silent, failing or in quarantine,
// nobody keeps.
func (c *Client) wonSplit(r round, token string) bool {
	t := r.count()
	if t.yes == 0 || t.yes+t.refused != len(c.nodes) {
		return false
	}
	votes := map[string]int{}
	for i := range c.nodes {
		if r.refused(i) {
			a, _, _ := r.answer(i)
			votes[a.grant.holder]++
		}
	}
	for holder, v := range votes {
		if holder == "?" || v > t.yes || (v == t.yes && holder < token) {
			return false
		}
	}
	return true
}

// sleep waits d on the client's clock. It reports false if ctx ended first.
func (c *Client) sleep(ctx context.Context, d time.Duration) bool {
	t := c.o.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
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
			why += fmt.Sprintf(", %d more kept out by the restart guard", len(res.Abstained))
			if len(res.Yes)+len(res.Abstained) >= c.quorum {
				quarantine = c.quarantined(res.Abstained, window)
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
func (c *Client) quarantined(masters []int, window time.Duration) error {
	now := c.o.clock.Now()
	why := make([]string, len(masters))
	for j, i := range masters {
		reason := c.nodes[i].health().distrust(now, window)
		if reason == "" {
			reason = "out of the quorum" // trusted again since the vote
		}
		why[j] = c.nodes[i].addr() + ": " + reason
	}
	return fmt.Errorf("%w: %s (guard window %v; a fresh cluster waits one window, and the window grows with the longest TTL this client used, see WithRestartGuard)",
		ErrQuarantined, strings.Join(why, "; "), window)
}

// rollback deletes the attempt's token on every master it may have reached
// in any round: those that said yes or abstained, those that failed, and
// those still outstanding, each once all its acquires have returned, so a
// late yes is undone too. Where the token is not found, a tombstone for it
// stays for one TTL, so that an acquire still in the network cannot land
// afterwards. A roll-back announces nothing: the lock was never held.
//
// A master the roll-back cannot reach (it may be starting, with the
// acquire delayed on its way) is tried again, backing off, until it
// answers or the attempt's TTL has passed (until): after that, a late
// acquire leaves nothing that would not expire by itself. The caller waits
// up to one node timeout; the rest runs in the background and Close stops
// and waits for it.
func (c *Client) rollback(req request, rounds []round, timeout time.Duration, until time.Time) {
	var targets []int
	for i := range c.nodes {
		if !refusedThroughout(rounds, i) {
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
		c.spawn(func() {
			for _, r := range rounds {
				<-r.res.Done(i)
			}
			if refusedThroughout(rounds, i) { // stragglers that turned out to be refusals
				finished <- struct{}{}
				return
			}
			c.rollbackOn(i, req, timeout, until, finished)
		})
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

// rollbackOn rolls the attempt back on master i, and reports on finished
// after the first try; redelete tries again if that one failed.
func (c *Client) rollbackOn(i int, req request, timeout time.Duration, until time.Time, finished chan<- struct{}) {
	ctx, cancel := c.o.clock.WithTimeout(context.Background(), timeout)
	_, err := c.nodes[i].release(ctx, req)
	cancel()
	finished <- struct{}{}
	if err != nil {
		c.redelete(i, req, err, timeout, until)
	}
}

// redelete runs req's release script on master i again after a try that
// failed with err, backing off, until one answers, the key's TTL has passed
// (until: after that, whatever landed has expired by itself), or the client
// closes. A delete of a key that may still be there is not abandoned at
// the first timeout. An error no retry fixes (an ACL, a replica) ends it at
// once.
func (c *Client) redelete(i int, req request, err error, timeout time.Duration, until time.Time) {
	wait := timeout
	for try := 1; ; try++ {
		if permanent(err) || !c.o.clock.Now().Add(wait).Before(until) {
			c.o.logger.Debug("redlock: delete failed; the key expires with its TTL",
				"addr", c.nodes[i].addr(), "key", req.key, "tries", try, "err", err)
			return
		}
		t := c.o.clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-c.closing:
			t.Stop()
			return
		}
		ctx, cancel := c.o.clock.WithTimeout(context.Background(), timeout)
		_, err = c.nodes[i].release(ctx, req)
		cancel()
		if err == nil {
			return
		}
		wait = min(2*wait, time.Second)
	}
}

// refusedThroughout reports whether master i answered a refusal in every
// round. It reads a round's answer only once it is in.
func refusedThroughout(rounds []round, i int) bool {
	for _, r := range rounds {
		if !r.refused(i) { // a refusal, and in
			return false
		}
	}
	return true
}

// expiryHint estimates when enough masters will be free for a quorum: just
// after the k-th soonest expiry among the refusing masters, where k is how
// many more free masters are needed. 0 means no estimate.
func (c *Client) expiryHint(r round) time.Duration {
	var ttls []time.Duration
	for _, i := range r.res.No {
		if r.refused(i) {
			a, _, _ := r.answer(i)
			switch d := a.grant.pttl; {
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
