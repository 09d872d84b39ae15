package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock"
	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// maxKeepRounds bounds how often the winner of a split vote asks the masters
// again before it gives up and rolls back.
const maxKeepRounds = 3

// outcome is the result of one attempt.
type outcome struct {
	lock   *Lock
	err    error
	freeIn time.Duration // when the holder's keys will have expired on enough masters; 0 if unknown
	split  bool          // nobody holds a quorum: retry soon, with jitter
	votes  round         // the last round, for the observer; zero when none was made
	raise  fenceNote     // the raise of lagging masters, for the observer
	took   time.Duration // how long the attempt took
	// behind: the attempt's waiter stands behind others in the masters'
	// queues; first: it heads the queue on a quorum of masters; far: behind
	// two others at least (see Client.inLine); reached counts the voting
	// masters that answered (see Client.voters).
	behind, first, far bool
	reached            int
}

// round is one fan-out of the acquire script with the attempt's token: each
// master's answer and vote, once it is in.
type round struct{ res *fanout.Result[ask] }

// ask is one master's answer to the acquire script in a round.
type ask struct {
	grant  scripts.Grant
	err    error // why the master failed; nil when it granted or refused
	unsent bool  // the acquire was never sent (err says why): nothing of it can land
}

// answer returns master i's answer and vote, and false while it is not in.
func (r round) answer(i int) (ask, fanout.Vote, bool) {
	rep, ok := r.res.Reply(i)
	return rep.Value, rep.Vote, ok
}

// refused reports whether master i has answered that another holds the key.
func (r round) refused(i int) bool {
	a, _, ok := r.answer(i)
	return ok && a.err == nil && !a.grant.OK
}

// roundCount counts what every master that has answered said.
type roundCount struct{ yes, abstained, refused, failed, unanswered int }

func (r round) count() roundCount {
	var t roundCount
	for i := range r.res.Nodes() {
		a, v, ok := r.answer(i)
		switch {
		case !ok:
			t.unanswered++
		case a.err != nil:
			t.failed++
		case !a.grant.OK:
			t.refused++
		case v == fanout.Yes:
			t.yes++
		default:
			t.abstained++
		}
	}
	return t
}

// hearOut waits, at most d, for masters yet to answer after a round that
// failed with some votes: a split vote can be judged only on every answer.
// A silent master is not waited for (see Client.silent).
func (c *Client) hearOut(r round, d time.Duration) {
	t := c.o.clock.NewTimer(d)
	defer t.Stop()
	for i := range r.res.Nodes() {
		if c.silent(i) {
			continue
		}
		select {
		case <-r.res.Done(i):
		case <-t.C():
			return
		}
	}
}

// attempt runs the algorithm once: fan the acquire out to every master, stop
// at quorum, choose the fence, check the validity, and on failure roll back
// everywhere the token may have landed.
//
// When contenders split the votes, the one holding the most masters (ties
// to the smaller token; see wonSplit) keeps its grants and asks the other
// masters again a moment later, as the others roll back and wait for its
// release: a split is resolved in a round trip or two rather than by
// jitter alone. The validity still counts from the first round.
//
// A hand-over passes from, the lock it takes over; other callers pass nil.
// A waiter passes its place in the masters' queues, where a refusal queues
// it; nil queues nothing.
func (c *Client) attempt(ctx context.Context, key string, ttl time.Duration, lo lockOptions, from *takeOver, at *place) outcome {
	token, err := c.token()
	if err != nil {
		return outcome{err: err}
	}
	req := request{key: key, token: token, owner: lo.owner, ttl: ttl, keep: c.o.fenceKeep, propose: c.propose(), calls: new(calls),
		permits: lo.permits, quorum: lo.quorum, set: lo.set}
	if lo.read {
		req.read, req.permits = true, scripts.Readers
	}
	if at != nil { // TryLock does not queue
		c.queueAt(&req, at)
	}
	var after *trail
	if from != nil {
		req.from, after = from.token, from.trail
	}
	c.noteTTL(ttl)
	window := c.guardWindow()
	timeout := c.nodeTimeout(ttl)

	start := c.o.clock.Now()
	var rounds []round
	kept := false
	for {
		r, err := c.acquireRound(ctx, req, window, timeout, after)
		if err != nil {
			return outcome{err: err}
		}
		rounds = append(rounds, r)
		if !r.res.OK() && len(r.res.Yes) > 0 {
			c.hearOut(r, timeout/5)
		}
		if r.res.OK() || len(rounds) > maxKeepRounds || !c.wonSplit(r, req) ||
			quorumlock.Validity(ttl, c.o.clock.Since(start)+timeout, c.o.drift) <= 0 {
			break
		}
		kept = true
		if c.pause(ctx, time.Duration(len(rounds))*max(timeout/50, 500*time.Microsecond)) != nil {
			break
		}
	}
	last := rounds[len(rounds)-1]

	var fence int64
	var raised []int
	ok := last.res.OK()
	var fenceErr error
	var raise fenceNote
	if ok {
		fence, raised, fenceErr = c.chooseFence(ctx, req, last, timeout)
		ok = fenceErr == nil
		raise = c.noteFence(last, raised, fenceErr)
	}
	elapsed := c.o.clock.Since(start)
	validity := quorumlock.Validity(ttl, elapsed, c.o.drift)
	if ok && validity > 0 {
		until := start.Add(ttl - c.o.drift.Reserve(ttl))
		return outcome{lock: c.newLock(req, lo, fence, until, last, newTrail(len(c.nodes), rounds), raised), votes: last, took: elapsed, raise: raise}
	}
	c.rollback(req, rounds, timeout, start.Add(ttl))

	out := outcome{freeIn: c.freeIn(last), votes: last, took: elapsed, raise: raise, reached: c.voters(last, key, window)}
	out.behind, out.first, out.far = c.inLine(last, req.waiter)
	t := last.count()
	granted := t.yes + t.abstained
	q := c.need(req.quorum)
	split := granted > 0 && t.refused > 0 && t.refused < q && granted+t.refused >= q
	switch {
	case kept || c.wonSplit(last, req):
		// This attempt won the split but the others' masters did not come
		// free in time; they have rolled back: try again soon.
		out.split = true
	case split && (granted+t.refused < len(c.nodes) || req.permits > 0):
		// A split seen only in part, or among permits, which have no
		// winner (see wonSplit): nobody can know the winner, so all roll
		// back and retry soon, spread by jitter.
		out.split = true
	case split:
		// A split this attempt lost: the winner keeps its grants and asks
		// again; wait for its release, or the backoff.
	}
	out.err = c.notObtained(lo.call, req, last, fenceErr, ok, elapsed, validity, timeout, window)
	if req.permits > 0 {
		if err := c.permitsDiffer(last, req); err != nil {
			out.err = err // no retry can succeed
		}
	}
	return out
}

// acquireRound fans the acquire script out once. On each master it first
// waits for the requests of after (a hand-over waits for every request of
// the lock it takes over, as a release does); where they have all returned
// already (the common case), the acquire goes out at once. Where one of
// them got no reply, the hand-over's acquire is not sent there: it answers
// errTrailUnsure (see Lock.handOver).
func (c *Client) acquireRound(ctx context.Context, req request, window, timeout time.Duration, after *trail) (round, error) {
	parts := make([]acquirePart, len(c.nodes)) // one allocation for every master's part
	cfg := c.overMasters(c.need(req.quorum), timeout)
	cfg.Silent = c.silentOf
	res, err := fanout.Run(ctx, cfg,
		func(ctx context.Context, n *fanout.Node[ask]) {
			i := n.Index()
			p := &parts[i]
			*p = acquirePart{c: c, n: n, key: req.key, window: window}
			p.out.to = p
			if after.repliedOn(i) {
				c.nodes[i].startAcquire(ctx, req, &p.out)
				return
			}
			go func() {
				unsure, err := after.waitReturned(ctx, i)
				if err == nil && unsure {
					err = errTrailUnsure
				}
				if err != nil {
					n.Answer(ask{err: err, unsent: true}, fanout.No, c.nodeErr(i, err))
					return
				}
				c.nodes[i].startAcquire(ctx, req, &p.out)
			}()
		})
	return round{res}, err
}

// acquirePart is one master's part of an acquisition round: it takes the
// master's answer into the round.
type acquirePart struct {
	out    pending[scripts.Grant]
	c      *Client
	n      *fanout.Node[ask]
	key    string
	window time.Duration
}

func (p *acquirePart) take(g scripts.Grant, err error) {
	p.n.Answer(p.c.judge(p.n.Index(), p.key, p.window, g, err))
}

// judge turns master i's answer to an acquire of key into its part of the
// round: what it said, its vote, and why it failed or refused.
func (c *Client) judge(i int, key string, window time.Duration, g scripts.Grant, err error) (ask, fanout.Vote, error) {
	if err != nil {
		return ask{err: err}, fanout.No, c.nodeErr(i, err)
	}
	if !g.OK {
		return ask{grant: g}, fanout.No, c.nodeErr(i, heldFor(g.PTTL))
	}
	return ask{grant: g}, c.vote(i, key, window), nil
}

// wonSplit decides whether this attempt won a split vote: every master
// answered, some granting it and the rest naming other tokens, none of which
// holds as many masters (a tie goes to the smaller token). Each master holds
// one token, so every contender that heard from every master sees the same
// counts and reaches the same verdict. The count is of masters held, not of
// votes: whether a master votes is each client's own judgement (a master in
// restart quarantine grants but abstains), which the others cannot see. So
// a split among the voting masters, with others in quarantine, still has a
// winner, and the winner's re-asks bring it the loser's masters once they
// are rolled back. With a master yet to answer or failing, nobody keeps.
//
// A permit never keeps: a master holds up to K tokens, so a refusal names
// one of several holders, and no contender can see who holds how many
// masters.
func (c *Client) wonSplit(r round, req request) bool {
	if req.permits > 0 {
		return false
	}
	token := req.token
	t := r.count()
	held := t.yes + t.abstained
	if held == 0 || t.refused == 0 || held+t.refused != len(c.nodes) {
		return false // no contender: masters abstaining are not a split
	}
	others := map[string]int{}
	for i := range c.nodes {
		if r.refused(i) {
			a, _, _ := r.answer(i)
			others[a.grant.Holder]++
		}
	}
	for holder, n := range others {
		if holder == scripts.Unknown || n > held || (n == held && holder < token) {
			return false
		}
	}
	return true
}

// chooseFence chooses the fence and makes it stick: the lagging counters
// of the quorum are raised to it.
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
// from its clock: see fenceEpoch in internal/scripts/lib.lua for how, and for the
// proof that fences keep growing across it.
//
// In the common case every master of the quorum reports the same count, and
// no extra round trip is made: each attempt proposes one count to every
// master (see propose), which those whose counters are lower take. raised lists the masters whose counters were
// raised to the fence here: Release need not raise them again.
func (c *Client) chooseFence(ctx context.Context, req request, won round, timeout time.Duration) (int64, []int, error) {
	counter := func(i int) int64 {
		a, _, _ := won.answer(i) // a yes vote: in
		return a.grant.Counter
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
	if atFence >= won.res.Need() {
		return fence, nil, nil
	}
	need := won.res.Need() - atFence
	res, err := fanout.Run(ctx, c.overNodes(len(lag), need, timeout), each(len(lag),
		func(ctx context.Context, j int, p *pending[bool]) { c.nodes[lag[j]].startRaise(ctx, req, fence, p) },
		func(j int, ok bool, err error) (struct{}, fanout.Vote, error) {
			i := lag[j]
			switch {
			case err != nil:
				return struct{}{}, fanout.No, c.nodeErr(i, err)
			case !ok:
				return struct{}{}, fanout.No, c.nodeErr(i, ErrLockNotHeld)
			}
			return struct{}{}, fanout.Yes, nil
		}))
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

// proposalLag is how far behind its clock the client proposes counts: a
// master caps a proposal at its own clock seed, so a proposal from a clock
// ahead of a master's would be cut there, and the masters would disagree.
// The lag covers the clocks' disagreement between client and masters.
const proposalLag = 100 * time.Millisecond

// propose returns this attempt's proposal for a new count, the same for
// every master (see The proposal in internal/scripts/acquire.lua): the client's
// clock, proposalLag ago, in the scripts' clock seed units (milliseconds
// times 1024), and above every proposal the client made before. Masters
// whose counters for the key are lower take it, so masters that drifted
// apart agree again, and the fence needs no raise. A proposal never lowers
// a count, and a master takes none above its own clock seed, so the fence's
// proof does not rest on it.
func (c *Client) propose() int64 {
	now := c.o.clock.Now().Add(-proposalLag).UnixMilli() * 1024
	for {
		last := c.proposed.Load()
		p := max(now, last+1)
		if c.proposed.CompareAndSwap(last, p) {
			return p
		}
	}
}

func (c *Client) token() (string, error) {
	t, err := c.o.tokens()
	if err != nil {
		return "", fmt.Errorf("redlock: token generator: %w", err)
	}
	if t == "" {
		return "", invalid("token generator returned an empty token")
	}
	return t, nil
}
