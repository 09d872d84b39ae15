package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/quorumlock/quorumlock/redlock/internal/info"
)

// Every event reaches the observer from this file: each call site in the
// library is one line, and each function here returns at once when no
// observer is set.

// call is one public call as the observer sees it. With no observer it is
// the zero call, and every method returns at once: nothing is read from
// the clock, nothing allocated.
type call struct {
	c        *Client
	ctx      context.Context
	op       Op
	key      string
	lock     *Lock // the lock an Extend or Release is about
	start    time.Time
	handed   outcome // a Release's hand-over attempt, reported at its end
	result   handOverResult
	tried    bool // a hand-over was attempted
	attempts int
}

// begin starts a public call: the observer's Start gives its context.
func (c *Client) begin(ctx context.Context, op Op, key string) (context.Context, call) {
	if c == nil || c.o.observer == nil || ctx == nil {
		return ctx, call{}
	}
	ctx = c.o.observer.Start(ctx, op, key)
	return ctx, call{c: c, ctx: ctx, op: op, key: key, start: c.o.clock.Now()}
}

// beginOn starts a public call on lock l.
func (l *Lock) beginOn(ctx context.Context, op Op) (context.Context, call) {
	ctx, k := l.c.begin(ctx, op, l.req.key)
	k.lock = l
	return ctx, k
}

// end reports the call's end, with the error it returns. Deferred before
// any of the client's locks is taken, it runs after they are released.
func (k *call) end(errp *error) {
	if k.c == nil {
		return
	}
	c, err := k.c, *errp
	if k.tried {
		c.reportAttempt(k.ctx, k.key, 0, k.handed)
		if k.handed.lock != nil {
			ho := OutcomeHandedOver
			if k.result == handedOverFree {
				ho = OutcomeNotHeld
			}
			c.o.observer.Observe(k.ctx, Event{Kind: KindHandOver, Key: k.key, Outcome: ho})
		}
	}
	ev := Event{Kind: KindCall, Op: k.op, Key: k.key, Err: err, Duration: c.o.clock.Since(k.start)}
	ev.Outcome = c.callOutcome(k.ctx, k.op, err)
	if ev.Outcome == OutcomeReleased {
		ev.Held = k.lock.heldFor()
		if k.result == handedOver {
			ev.Outcome = OutcomeHandedOver
		}
	}
	if k.op == OpExtend && ev.Outcome != OutcomeInvalid && ev.Outcome != OutcomeClosed {
		c.o.observer.Observe(k.ctx, Event{Kind: KindExtend, Key: k.key, Outcome: ev.Outcome, Err: err, Duration: ev.Duration, Attempt: 1})
	}
	if k.lock != nil {
		k.lock.reportLoss(k.ctx)
	}
	c.o.observer.Observe(k.ctx, ev)
}

// callOutcome classifies what a public call returned.
func (c *Client) callOutcome(ctx context.Context, op Op, err error) Outcome {
	switch {
	case err == nil && op == OpRelease:
		return OutcomeReleased
	case err == nil && op == OpExtend:
		return OutcomeExtended
	case err == nil && op == OpDo:
		return OutcomeDone
	case err == nil:
		return OutcomeObtained
	case errors.Is(err, ErrInvalid):
		return OutcomeInvalid
	case errors.Is(err, ErrClosed):
		return OutcomeClosed
	case errors.Is(err, ErrLockLost):
		return OutcomeLost
	case errors.Is(err, ErrLockNotHeld):
		return OutcomeNotHeld
	case op == OpDo && !errors.Is(err, ErrNotObtained):
		return OutcomeFailed // fn's error
	}
	return c.failure(ctx, err)
}

// failure classifies an error that kept a lock from being taken or kept.
func (c *Client) failure(ctx context.Context, err error) Outcome {
	switch {
	case errors.Is(err, ErrInvalid):
		return OutcomeInvalid
	case errors.Is(err, ErrClosed):
		return OutcomeClosed
	case ctx.Err() != nil:
		return OutcomeCtxDone
	case errors.Is(err, ErrMisconfigured):
		return OutcomeMisconfigured
	case errors.Is(err, ErrQuarantined):
		return OutcomeQuarantined
	case errors.Is(err, ErrHeld):
		return OutcomeHeld
	}
	return OutcomeUnavailable
}

// observeAttempt reports an attempt of a call, n-th in it.
func (c *Client) observeAttempt(ctx context.Context, key string, n int, a outcome) {
	if c.o.observer == nil {
		return
	}
	c.reportAttempt(ctx, key, n, a)
}

func (c *Client) reportAttempt(ctx context.Context, key string, n int, a outcome) {
	ev := Event{Kind: KindAttempt, Key: key, Attempt: n, Err: a.err, Duration: a.took, Outcome: OutcomeObtained}
	if a.votes.res != nil {
		t := a.votes.count()
		ev.Votes = Votes{Masters: len(c.nodes), Quorum: a.votes.res.Need(), Granted: t.yes, Abstained: t.abstained,
			Refused: t.refused, Failed: t.failed, Unanswered: t.unanswered}
	}
	if a.err != nil {
		ev.Outcome = c.failure(ctx, a.err)
		if ev.Outcome == OutcomeUnavailable && a.votes.res != nil && ev.Votes.Granted+ev.Votes.Abstained >= ev.Votes.Quorum {
			ev.Outcome = OutcomeExpired
		}
	}
	c.reportFenceRaise(ctx, key, a.raise)
	c.o.observer.Observe(ctx, ev)
}

// observeHandOver keeps a Release's hand-over attempt for the call's end:
// the Release holds the lock's operation mutex until then.
func (k *call) observeHandOver(a outcome, r handOverResult) {
	if k == nil || k.c == nil {
		return
	}
	k.handed, k.result, k.tried = a, r, true
}

// stampHeld notes when a lock was obtained, for the Held of its end.
func (c *Client) stampHeld(l *Lock) {
	if c.o.observer != nil {
		l.heldSince = c.o.clock.Now()
	}
}

func (l *Lock) heldFor() time.Duration {
	if l.heldSince.IsZero() {
		return 0
	}
	return l.c.o.clock.Since(l.heldSince)
}

// reportLoss reports l's loss, once, if it is lost.
func (l *Lock) reportLoss(ctx context.Context) {
	c := l.c
	if c.o.observer == nil {
		return
	}
	l.mu.Lock()
	lost := l.state == lost
	l.mu.Unlock()
	if !lost || !l.lossReported.CompareAndSwap(false, true) {
		return
	}
	c.o.observer.Observe(ctx, Event{Kind: KindLost, Key: l.req.key, Outcome: OutcomeLost, Err: ErrLockLost, Held: l.heldFor()})
}

// observeRenew reports an extension the watchdog made, its n-th try.
func (l *Lock) observeRenew(n int, took time.Duration, err error) {
	c := l.c
	if c.o.observer == nil {
		return
	}
	ev := Event{Kind: KindExtend, Key: l.req.key, Auto: true, Attempt: n, Err: err, Duration: took, Outcome: OutcomeExtended}
	switch {
	case errors.Is(err, errGone):
		ev.Outcome = OutcomeLost
	case err != nil:
		ev.Outcome = c.failure(context.Background(), err)
	}
	c.o.observer.Observe(context.Background(), ev)
}

// observeWake reports a waiter woken: by an announcement (or its turn), or by its timer.
func (c *Client) observeWake(ctx context.Context, key string, woken bool) {
	if c.o.observer == nil {
		return
	}
	ev := Event{Kind: KindWake, Key: key, Outcome: OutcomeTimer}
	if woken {
		ev.Outcome = OutcomeWoken
	}
	c.o.observer.Observe(ctx, ev)
}

// fenceNote is an attempt's raise of lagging masters' counters to the
// fence (see chooseFence), reported with the attempt: a hand-over's attempt
// runs under the Release's lock.
type fenceNote struct {
	fence           int64
	lagging, raised int
	err             error
}

// noteFence notes the raise chooseFence made after round won, if it made
// one; raised and err are what it returned.
func (c *Client) noteFence(won round, raised []int, err error) fenceNote {
	if c.o.observer == nil {
		return fenceNote{}
	}
	var n fenceNote
	for _, i := range won.res.Yes {
		a, _, _ := won.answer(i)
		n.fence = max(n.fence, a.grant.Counter)
	}
	atFence := 0
	for _, i := range won.res.Yes {
		if a, _, _ := won.answer(i); a.grant.Counter < n.fence {
			n.lagging++
		} else {
			atFence++
		}
	}
	if atFence >= won.res.Need() {
		return fenceNote{} // no raise was needed
	}
	n.raised, n.err = len(raised), err
	return n
}

// reportFenceRaise reports an attempt's raise, if it made one.
func (c *Client) reportFenceRaise(ctx context.Context, key string, n fenceNote) {
	if n.lagging == 0 {
		return
	}
	ev := Event{Kind: KindFenceRaise, Key: key, Fence: n.fence, Lagging: n.lagging, Raised: n.raised, Err: n.err, Outcome: OutcomeRaised}
	if n.err != nil {
		ev.Outcome = OutcomeFailed
	}
	c.o.observer.Observe(ctx, ev)
}

// observeSilence reports master i turning silent, or heard again. The
// silence is judged where a round asks for it; each change is reported once.
func (c *Client) observeSilence(i int, silent bool) {
	if c.o.observer == nil || i >= len(c.silenced) || c.silenced[i].Load() == silent ||
		!c.silenced[i].CompareAndSwap(!silent, silent) {
		return
	}
	ev := Event{Kind: KindMaster, Master: c.nodes[i].addr(), State: MasterHeard}
	if silent {
		ev.State, ev.Reason = MasterSilent, "no reply"
	}
	c.o.observer.Observe(context.Background(), ev)
}

// observeCondition reports a master's change of condition as the log
// reports it: it answers again, or it fails, for a while or until its
// configuration changes.
func observeCondition(obs Observer, addr, prev, kind string) {
	if obs == nil || kind == prev {
		return
	}
	ev := Event{Kind: KindMaster, Master: addr, State: MasterUp, Reason: prev}
	switch {
	case kind == "":
	case remedy(kind) == "":
		ev.State, ev.Reason = MasterDown, kind
	default:
		ev.State, ev.Reason = MasterFailing, kind
	}
	obs.Observe(context.Background(), ev)
}

// guardChange is the guard's change of a master's state, kept while the
// server's mutex is held and reported once it is released.
type guardChange struct {
	obs    Observer
	events [2]Event
	n      int
}

// noteChange records the change a health read makes, if any: the same
// changes logChange logs, judged before it updates what it logged.
func (s *server) noteChange(ch *guardChange, prev, h *health, f info.Fields, kind string) {
	if s.o.observer == nil {
		return
	}
	ch.obs = s.o.observer
	add := func(ev Event) {
		if ch.n < len(ch.events) {
			ev.Kind, ev.Master = KindMaster, s.addr
			ch.events[ch.n] = ev
			ch.n++
		}
	}
	if kind != s.notes.kind {
		switch {
		case kind == "voting":
			// Again, or at first sight: the log is silent on the latter, but
			// a gauge wants every master from its first answer.
			add(Event{State: MasterVoting, Reason: kind})
		case kind == "unreadable-trusted" || kind == "may-evict-trusted":
			add(Event{State: MasterDegraded, Reason: kind})
		case h.veto != "":
			add(Event{State: MasterQuarantined, Reason: kind})
		}
	}
	if f.ConfigDenied != s.notes.config && f.Unreadable == "" && f.ConfigDenied != "" {
		add(Event{State: MasterDegraded, Reason: "config-unreadable"})
	}
	if !h.known || h.veto != "" {
		return
	}
	w := s.window()
	if w <= 0 {
		return
	}
	switch {
	case !h.promotedAt.IsZero() && (prev == nil || prev.promotedAt.IsZero() || prev.identity() != h.identity()):
		add(Event{State: MasterQuarantined, Reason: "promoted", Until: h.promotedAt.Add(w)})
	case h.durable:
	case prev != nil && prev.runID != h.runID:
		reason := "restarted"
		if h.seenAt.Sub(h.startedAt) >= w {
			reason = "replaced"
		}
		add(Event{State: MasterQuarantined, Reason: reason, Until: h.bootAt.Add(w)})
	case prev == nil && h.seenAt.Sub(h.startedAt) < w:
		add(Event{State: MasterQuarantined, Reason: "restarted", Until: h.bootAt.Add(w)})
	}
	if ch.n == 2 && ch.events[0].State == MasterVoting && ch.events[1].State == MasterQuarantined {
		ch.events[0], ch.n = ch.events[1], 1 // at first sight, quarantined: it does not vote
	}
}

// report hands the observer the changes noted, after the server's mutex is
// released.
func (ch *guardChange) report() {
	for _, ev := range ch.events[:ch.n] {
		ch.obs.Observe(context.Background(), ev)
	}
}

// next numbers the call's next attempt.
func (k *call) next() int {
	k.attempts++
	return k.attempts
}
