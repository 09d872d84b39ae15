package redlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// outcomes is the one tally of an acquisition round that its error is
// written from: each master's outcome, read once. A master whose answer is
// not in gave no reply: the round, and the roll-back after it, waited for it
// as long as they wait for any master.
func (c *Client) outcomes(r round, key string, window time.Duration) []MasterAnswer {
	now := c.o.clock.Now()
	ms := make([]MasterAnswer, len(c.nodes))
	for i := range c.nodes {
		rep, in := r.res.Reply(i)
		m, ok := c.answerOf(i, in, rep.Value.err, rep.Err)
		switch {
		case !ok:
		case !rep.Value.grant.OK:
			m.Answer, m.Err = MasterHeld, rep.Err
		case rep.Vote == fanout.Yes:
			m.Answer = MasterAgreed
		default:
			c.abstained(&m, key, now, window)
		}
		ms[i] = m
	}
	return ms
}

// answerOf starts master i's line in an error: no reply when its answer is
// not in, failed when it failed (failure sorts the failure, err is what the
// line reports). ok says the master answered, for the caller to sort.
func (c *Client) answerOf(i int, in bool, failure, err error) (m MasterAnswer, ok bool) {
	m = MasterAnswer{Node: i, Addr: c.nodes[i].addr()}
	switch {
	case !in:
		m.Answer, m.Err = MasterNoReply, c.nodeErr(i, errNoReply)
	case failure != nil:
		m.Err = err
		m.Answer, m.Why = failed(failure)
	default:
		return m, true
	}
	return m, false
}

// abstained marks m as a yes that did not count, with why and when the
// master votes again, as the restart guard judges master m.Node for key.
func (c *Client) abstained(m *MasterAnswer, key string, now time.Time, window time.Duration) {
	h := c.nodes[m.Node].health(key)
	m.Answer, m.Why, m.VotesIn = MasterAbstained, h.distrust(now, window), h.votesIn(now, window)
	if m.Why == "" {
		m.Why = trustedSince
	}
}

// trustedSince is the Why of a master that abstained and that the guard
// has trusted since.
const trustedSince = "not counted when it answered, trusted since"

// failed sorts a master's failure: no reply, or another failure of the
// kind given.
func failed(err error) (Answer, string) {
	switch kind := failureKind(err); {
	case errors.Is(err, context.Canceled):
		return MasterFailed, "cancelled"
	case kind == "no reply":
		return MasterNoReply, ""
	default:
		return MasterFailed, kind
	}
}

// notObtained is the error of a failed attempt of call op on key, written
// from one tally of its last round (see outcomes).
func (c *Client) notObtained(op Op, req request, last round, fenceErr error, quorum bool, elapsed, validity, timeout, window time.Duration) error {
	ms := c.outcomes(last, req.key, window)
	inLine(ms, last, req.read)
	q := c.need(req.quorum)
	e := &AttemptError{Op: hold(op), Key: req.key, Quorum: q, Masters: ms, head: "redlock: not obtained"}
	e.wraps = []error{ErrNotObtained}
	switch mis, kinds := misconfigured(ms, q); {
	case fenceErr != nil:
		e.cause = fenceErr.Error()
	case quorum:
		e.cause = fmt.Sprintf("a quorum agreed, but the attempt took %v, leaving validity %v", roughly(elapsed), roughly(validity))
	case mis > 0:
		e.wraps = append(e.wraps, ErrMisconfigured)
		e.cause = fmt.Sprintf("%d of %d masters refuse the lock's commands (%s): %s", mis, len(ms), strings.Join(kinds, ", "), c.briefRemedy(kinds[0]))
		e.Fix = c.fix(req, kinds)
	default:
		e.cause = acquireCause(ms, q, timeout)
		if t := tallied(ms); t[MasterAbstained] > 0 && t[MasterAgreed]+t[MasterAbstained] >= q {
			e.wraps = append(e.wraps, ErrQuarantined)
		}
	}
	e.wraps = append(e.wraps, nodeErrs(ms)...)
	return e
}

// writerWaitsWhy is the Why of a master that refused a read hold because a
// writer waits in the key's queue (see read.lua): no writer holds it.
// lineWhy is that of a master that refused a free key because others wait
// in its queue ahead of the caller (see acquire.lua).
const (
	writerWaitsWhy = "a writer waits"
	lineWhy        = "others wait in line"
)

// inLine marks, among ms, the masters of round r that refused the hold for
// a line of waiters rather than a holder: a read hold's for a writer
// waiting (they name no holder, and a head of the queue), another's for
// others ahead in the queue of a free key.
func inLine(ms []MasterAnswer, r round, read bool) {
	for i := range ms {
		a, _, ok := r.answer(i)
		if !ok || ms[i].Answer != MasterHeld || a.grant.Head == "" {
			continue
		}
		switch {
		case read && a.grant.Holder == scripts.Unknown:
			ms[i].Why = writerWaitsWhy
		case !read && a.grant.PTTL == scripts.NoKey:
			ms[i].Why = lineWhy
		}
	}
}

// heldWords says in a few words what keeps the key from the caller on the
// masters of ms that refused it: a writer waiting in line, or others
// waiting in line, when that is so on each of them, else another client.
func heldWords(ms []MasterAnswer) (cause, obstacle string) {
	writer := false
	for _, m := range ms {
		switch {
		case m.Answer != MasterHeld:
		case m.Why == writerWaitsWhy:
			writer = true
		case m.Why != lineWhy:
			return "held by another client", "held by another client"
		}
	}
	if writer {
		return "a writer waits for the key", "with a writer waiting"
	}
	return "others wait in line for the key", "with others waiting in line"
}

// tallied counts the masters of each outcome.
func tallied(ms []MasterAnswer) [MasterFailed + 1]int {
	var t [MasterFailed + 1]int
	for _, m := range ms {
		t[m.Answer]++
	}
	return t
}

// nodeErrs returns the masters' *NodeError values, in the order of ms.
func nodeErrs(ms []MasterAnswer) []error {
	var errs []error
	for _, m := range ms {
		if m.Err != nil {
			errs = append(errs, m.Err)
		}
	}
	return errs
}

// misconfigured returns how many masters failed in ways no retry fixes (an
// ACL, a password, a replica or a cluster member given as a master), and
// their kinds, when they are so many that no quorum is possible without
// them: waiting for the lock would wait for ever. 0 otherwise.
func misconfigured(ms []MasterAnswer, quorum int) (int, []string) {
	n := 0
	var kinds []string
	for _, m := range ms {
		if m.Answer != MasterFailed || m.Err == nil || !permanent(m.Err) {
			continue
		}
		n++
		if !slices.Contains(kinds, m.Why) {
			kinds = append(kinds, m.Why)
		}
	}
	if n <= len(ms)-quorum {
		return 0, nil
	}
	return n, kinds
}

// briefRemedy is remedy in a few words, for a one-line error.
func (c *Client) briefRemedy(kind string) string {
	switch kind {
	case "NOPERM":
		if ns := c.names().NS; ns != "" {
			return fmt.Sprintf("grant the ACL user ~%s* &%s*", ns, ns)
		}
		return fmt.Sprintf("grant the ACL user the lock's keys and ~%s* &%s*", scripts.ReservedPrefix, scripts.ReservedPrefix)
	case "MOVED", "ASK", "CROSSSLOT", "CLUSTERDOWN":
		return "a Redis Cluster member: give the cluster as one node, redis+cluster://host:port,..."
	case "NOSCRIPT", "unknown command":
		return "the master refuses Lua scripts; allow EVAL and EVALSHA"
	}
	return remedy(kind)
}

// fix says in full what would fix each kind of failure given.
func (c *Client) fix(req request, kinds []string) string {
	fixes := make([]string, len(kinds))
	for j, k := range kinds {
		fixes[j] = k + ": " + remedy(k)
		if k == "NOPERM" {
			fixes[j] += "; the lock's scripts touch " + c.touches(req)
		}
	}
	return strings.Join(fixes, "; ")
}

// acquireCause says in a few words why masters that a quorum was asked of
// did not make one: the one obstacle that alone kept the quorum out of
// reach, when there is one, or else each obstacle with its count.
func acquireCause(ms []MasterAnswer, quorum int, timeout time.Duration) string {
	t := tallied(ms)
	n, spare := len(ms), len(ms)-quorum
	heldCause, heldObstacle := heldWords(ms)
	switch {
	case t[MasterAbstained] > 0 && t[MasterAgreed]+t[MasterAbstained] >= quorum:
		return fmt.Sprintf("%d of %d masters %s", t[MasterAbstained], n, quarantine(ms))
	case t[MasterAgreed] >= quorum:
		return fmt.Sprintf("%d of %d masters granted, but too late: after the node timeout of %v", t[MasterAgreed], n, timeout)
	case t[MasterHeld] > spare:
		return fmt.Sprintf("%s (%d of %d masters)", heldCause, t[MasterHeld], n)
	case t[MasterNoReply] > spare:
		return fmt.Sprintf("%d of %d masters gave no reply within %v", t[MasterNoReply], n, timeout)
	case t[MasterFailed] > spare:
		return fmt.Sprintf("%d of %d masters %s", t[MasterFailed], n, failures(ms))
	}
	return fmt.Sprintf("%d of %d masters granted, %d needed: %s", t[MasterAgreed], n, quorum, obstacles(ms, timeout, heldObstacle))
}

// obstacles lists, with their counts, the outcomes of the masters that did
// not agree; held names MasterHeld and MasterNotHeld in the caller's terms,
// or is "" to leave them out.
func obstacles(ms []MasterAnswer, timeout time.Duration, held string) string {
	t := tallied(ms)
	var parts []string
	if k := t[MasterHeld] + t[MasterNotHeld]; k > 0 && held != "" {
		parts = append(parts, fmt.Sprintf("%d %s", k, held))
	}
	if k := t[MasterAbstained]; k > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", k, strings.Replace(quarantine(ms), " after a restart,", ",", 1)))
	}
	if k := t[MasterNoReply]; k > 0 {
		parts = append(parts, fmt.Sprintf("%d gave no reply within %v", k, timeout))
	}
	if k := t[MasterFailed]; k > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", k, failures(ms)))
	}
	return strings.Join(parts, ", ")
}

// quarantine says why the abstaining masters of ms did not vote: a restart
// or promotion that time ends, with when the first votes, or the first
// reason that time does not end.
func quarantine(ms []MasterAnswer) string {
	first := time.Duration(-1)
	promoted, restarted := false, false
	for _, m := range ms {
		if m.Answer != MasterAbstained {
			continue
		}
		if m.VotesIn <= 0 && m.Why != trustedSince {
			return "may not vote: " + m.Why
		}
		if first < 0 || m.VotesIn < first {
			first = m.VotesIn
		}
		if strings.HasPrefix(m.Why, "promoted") {
			promoted = true
		} else {
			restarted = true
		}
	}
	after := "a restart"
	switch {
	case promoted && restarted:
		after = "a restart or failover"
	case promoted:
		after = "a failover"
	}
	return fmt.Sprintf("quarantined after %s, first votes in %v", after, roughly(first))
}

// failures names the kinds of failure of ms: "unreachable (connection
// refused)" when every one is the network's or TLS's, else "failed
// (kinds)".
func failures(ms []MasterAnswer) string {
	var kinds []string
	network := true
	for _, m := range ms {
		if m.Answer != MasterFailed {
			continue
		}
		if !slices.Contains(kinds, m.Why) {
			kinds = append(kinds, m.Why)
		}
		switch {
		case m.Why == "connection refused", m.Why == "unreachable", m.Why == "unresolvable host", strings.HasPrefix(m.Why, "tls: "):
		default:
			network = false
		}
	}
	if network {
		if kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == "unreachable" }); len(kinds) == 0 {
			return "unreachable"
		}
		return "unreachable (" + strings.Join(kinds, ", ") + ")"
	}
	return "failed (" + strings.Join(kinds, ", ") + ")"
}

// freeIn estimates when enough masters will be free for a quorum: just
// after the k-th soonest expiry among the refusing masters, where k is how
// many more free masters are needed. 0 means no estimate.
func (c *Client) freeIn(r round) time.Duration {
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
	k := r.res.Need() - (len(c.nodes) - len(ttls))
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

// waitAll waits until every master of res has answered, or d has passed.
func waitAll[T any](clk clock.Clock, res *fanout.Result[T], d time.Duration) {
	t := clk.NewTimer(d)
	defer t.Stop()
	for i := range res.Nodes() {
		select {
		case <-res.Done(i):
		case <-t.C():
			return
		}
	}
}
