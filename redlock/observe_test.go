package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// recorder is an Observer that keeps every event, and marks each call's
// context so that the test can see which call an event came in.
type recorder struct {
	mu     sync.Mutex
	starts []Op
	events []Event
	in     []Op // the call each event's ctx belongs to; "" for none
}

type opKey struct{}

func (r *recorder) Start(ctx context.Context, op Op, _ string) context.Context {
	r.mu.Lock()
	r.starts = append(r.starts, op)
	r.mu.Unlock()
	return context.WithValue(ctx, opKey{}, op)
}

func (r *recorder) Observe(ctx context.Context, ev Event) {
	op, _ := ctx.Value(opKey{}).(Op)
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.in = append(r.in, op)
	r.mu.Unlock()
}

// of returns the events of kind, in order.
func (r *recorder) of(kind Kind) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, ev := range r.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// outcomes returns the outcomes of the events of kind, in order.
func (r *recorder) outcomes(kind Kind) []Outcome {
	var out []Outcome
	for _, ev := range r.of(kind) {
		out = append(out, ev.Outcome)
	}
	return out
}

// calls returns the outcome of each call of op.
func (r *recorder) calls(op Op) []Outcome {
	var out []Outcome
	for _, ev := range r.of(KindCall) {
		if ev.Op == op {
			out = append(out, ev.Outcome)
		}
	}
	return out
}

// masters returns each KindMaster event as "state reason" for addr.
func (r *recorder) masters(addr string) []string {
	var out []string
	for _, ev := range r.of(KindMaster) {
		if ev.Master == addr {
			out = append(out, string(ev.State)+" "+ev.Reason)
		}
	}
	return out
}

// eventually waits, at most 10s, until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not within 10s: %s", what)
}

func TestObserver_Nil_IsInvalid(t *testing.T) {
	var typed *recorder
	for _, obs := range []Observer{nil, typed} {
		_, err := NewFromAddrs([]string{"127.0.0.1:1"}, WithObserver(obs))
		assert.ErrorIs(t, err, ErrInvalid)
	}
}

// TryLock, a contended TryLock, Extend and Release: each call starts once,
// its events come in its context, and the attempts carry the votes.
func TestObserver_TryLockExtendRelease(t *testing.T) {
	srv := masters(t, 3)
	rec := &recorder{}
	c := client(t, srv, WithObserver(rec))
	other := client(t, srv)
	ctx := context.Background()

	l, err := c.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	held, err := other.TryLock(ctx, "h", 10*time.Second)
	require.NoError(t, err)
	_, err = c.TryLock(ctx, "h", 10*time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	require.NoError(t, l.Extend(ctx, 5*time.Second))
	time.Sleep(5 * time.Millisecond)
	require.NoError(t, l.Release(ctx))
	require.NoError(t, held.Release(ctx))

	assert.Equal(t, []Op{OpTryLock, OpTryLock, OpExtend, OpRelease}, rec.starts)
	attempts := rec.of(KindAttempt)
	require.Len(t, attempts, 2)
	assert.Equal(t, OutcomeObtained, attempts[0].Outcome)
	assert.Equal(t, 1, attempts[0].Attempt)
	assert.Equal(t, 3, attempts[0].Votes.Masters)
	assert.Equal(t, 2, attempts[0].Votes.Quorum)
	assert.GreaterOrEqual(t, attempts[0].Votes.Granted, 2)
	assert.Positive(t, attempts[0].Duration)
	assert.Equal(t, OutcomeHeld, attempts[1].Outcome)
	assert.GreaterOrEqual(t, attempts[1].Votes.Refused, 2)
	assert.ErrorIs(t, attempts[1].Err, ErrNotObtained)
	assert.Equal(t, "h", attempts[1].Key)

	assert.Equal(t, []Outcome{OutcomeObtained, OutcomeHeld}, rec.calls(OpTryLock))
	assert.Equal(t, []Outcome{OutcomeExtended}, rec.calls(OpExtend))
	assert.Equal(t, []Outcome{OutcomeExtended}, rec.outcomes(KindExtend))
	assert.Equal(t, []Outcome{OutcomeReleased}, rec.calls(OpRelease))
	rel := rec.of(KindCall)[3]
	assert.GreaterOrEqual(t, rel.Held, 5*time.Millisecond, "how long the lock was held")
	assert.Empty(t, rec.of(KindLost))

	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, ev := range rec.events {
		if ev.Kind == KindCall {
			assert.Equal(t, ev.Op, rec.in[i], "a call's end comes in its own context")
		}
		if ev.Kind == KindAttempt {
			assert.Equal(t, OpTryLock, rec.in[i])
		}
	}
}

// A lock whose key is deleted on every master is lost, and the loss is
// reported once: by the Extend that finds it, not again by the Release
// after it; an auto-extended lock's loss is reported by its watchdog.
func TestObserver_Lost_ReportedOnce(t *testing.T) {
	srv := masters(t, 3)
	rec := &recorder{}
	c := client(t, srv, WithObserver(rec))
	ctx := context.Background()
	wipe := func(key string) { deleteHeld(t, key, srv...) }

	l, err := c.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	wipe("k")
	require.ErrorIs(t, l.Extend(ctx, 10*time.Second), ErrLockLost)
	require.ErrorIs(t, l.Release(ctx), ErrLockLost)
	assert.Equal(t, []Outcome{OutcomeLost}, rec.calls(OpExtend))
	assert.Equal(t, []Outcome{OutcomeLost}, rec.calls(OpRelease))
	require.Len(t, rec.of(KindLost), 1)
	assert.Equal(t, "k", rec.of(KindLost)[0].Key)

	auto, err := c.TryLock(ctx, "auto", 300*time.Millisecond, WithAutoExtend())
	require.NoError(t, err)
	wipe("auto")
	select {
	case <-auto.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the auto-extended lock was not lost")
	}
	eventually(t, "two losses", func() bool { return len(rec.of(KindLost)) == 2 })
	ext := rec.of(KindExtend)
	require.NotEmpty(t, ext)
	last := ext[len(ext)-1]
	assert.True(t, last.Auto)
	assert.Equal(t, OutcomeLost, last.Outcome)
	require.ErrorIs(t, auto.Release(ctx), ErrLockLost)
	assert.Len(t, rec.of(KindLost), 2)
}

// A waiter of another client is woken by the release's announcement; a
// waiter of the same client is handed the lock.
func TestObserver_Lock_WakeAndHandOver(t *testing.T) {
	srv := masters(t, 3)
	rec := &recorder{}
	// A long backoff: only the release wakes a waiter.
	c := client(t, srv, WithObserver(rec), WithRetry(ConstantBackoff(time.Minute)), WithQueueLease(time.Hour))
	other := client(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// Woken by another client's release: a long backoff, so the wake is
	// the announcement's.
	held, err := other.TryLock(ctx, "w", 10*time.Second)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		l, err := c.Lock(ctx, "w", 10*time.Second)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	eventually(t, "a first attempt", func() bool { return len(rec.of(KindAttempt)) >= 1 })
	time.Sleep(50 * time.Millisecond) // the waiter subscribes
	require.NoError(t, held.Release(ctx))
	require.NoError(t, <-got)
	assert.Contains(t, rec.outcomes(KindWake), OutcomeWoken)
	at := rec.outcomes(KindAttempt)
	assert.Equal(t, OutcomeHeld, at[0])
	assert.Equal(t, OutcomeObtained, at[len(at)-1])
	lock := rec.of(KindCall)[0]
	assert.Equal(t, OpLock, lock.Op)
	assert.Equal(t, OutcomeObtained, lock.Outcome)
	assert.GreaterOrEqual(t, lock.Duration, 50*time.Millisecond, "the whole wait")

	// Handed over within the client.
	first, err := c.TryLock(ctx, "h", 10*time.Second)
	require.NoError(t, err)
	go func() {
		l, err := c.Lock(ctx, "h", 10*time.Second)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	eventually(t, "a waiter between attempts", func() bool {
		c.hub.mu.Lock()
		defer c.hub.mu.Unlock()
		q := c.hub.queues["h"]
		return q != nil && len(q.waiters) == 1 && !q.waiters[0].busy && len(rec.of(KindAttempt)) >= len(at)+3 // its own TryLock, the waiter's first attempt and its retry once subscribed
	})
	require.NoError(t, first.Release(ctx))
	require.NoError(t, <-got)
	ho := rec.of(KindHandOver)
	require.Len(t, ho, 1)
	assert.Equal(t, OutcomeHandedOver, ho[0].Outcome)
	assert.Contains(t, rec.calls(OpRelease), OutcomeHandedOver)
	handed := 0
	for _, ev := range rec.of(KindAttempt) {
		if ev.Attempt == 0 && ev.Outcome == OutcomeObtained {
			handed++
		}
	}
	assert.Equal(t, 1, handed, "the hand-over's attempt")
}

// A held key's waiter whose ctx ends: its call ends ctx_done, and with no
// release to announce, its timer wakes it (to renew its place, at the head
// of the line, every third of the queue lease).
func TestObserver_Lock_CtxDoneAndTimer(t *testing.T) {
	srv := masters(t, 3)
	rec := &recorder{}
	c := client(t, srv, WithObserver(rec), WithRetry(ConstantBackoff(20*time.Millisecond)), WithQueueLease(60*time.Millisecond))
	other := client(t, srv, WithNodeTimeout(time.Second)) // its lock must not fail on a loaded machine
	_, err := other.TryLock(context.Background(), "k", 10*time.Second)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err = c.Lock(ctx, "k", time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	assert.Equal(t, []Outcome{OutcomeCtxDone}, rec.calls(OpLock))
	assert.Contains(t, rec.outcomes(KindWake), OutcomeTimer)
}

// A token generator that fails: the attempt is invalid.
func TestObserver_Attempt_Invalid(t *testing.T) {
	srv := masters(t, 3)
	rec := &recorder{}
	c := client(t, srv, WithObserver(rec), WithTokenGenerator(func() (string, error) { return "", nil }))
	_, err := c.TryLock(context.Background(), "k", time.Second)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Equal(t, []Outcome{OutcomeInvalid}, rec.outcomes(KindAttempt))
	assert.Equal(t, []Outcome{OutcomeInvalid}, rec.calls(OpTryLock))
}

// Freshly started masters are young: the restart guard quarantines them,
// each reported once, with the end of its quarantine. The node timeout is
// long, so that a loaded machine adds no reports of masters too slow.
func TestObserver_Quarantine(t *testing.T) {
	srv := masters(t, 3)
	rec := &recorder{}
	c := client(t, srv, WithObserver(rec), WithRestartGuard(time.Minute), WithNodeTimeout(time.Second))
	for range 2 {
		_, err := c.TryLock(context.Background(), "k", 10*time.Second)
		require.ErrorIs(t, err, ErrQuarantined)
	}
	assert.Equal(t, []Outcome{OutcomeQuarantined, OutcomeQuarantined}, rec.outcomes(KindAttempt))
	assert.GreaterOrEqual(t, rec.of(KindAttempt)[0].Votes.Abstained, 2)
	require.NoError(t, c.Close()) // an attempt returns at quorum: Close waits for the last replies
	for _, s := range srv {
		assert.Equal(t, []string{"quarantined restarted"}, rec.masters(s.Addr()))
	}
	for _, ev := range rec.of(KindMaster) {
		assert.WithinDuration(t, time.Now().Add(time.Minute), ev.Until, 10*time.Second)
	}
}

// A master killed is down, then up when it is back; a paused one is silent,
// then heard. The node timeout is long, so that a loaded machine adds no
// reports of masters too slow, and fails no call of the two left.
func TestObserver_MasterDownSilentUp(t *testing.T) {
	srv := masters(t, 3)
	rec := &recorder{}
	c := client(t, srv, WithObserver(rec), WithNodeTimeout(time.Second))
	ctx := context.Background()
	n := 0
	try := func() {
		t.Helper()
		// A key of its own each time: a release returns at a quorum, and
		// the delete on a master left out of it may still be on its way.
		n++
		l, err := c.TryLock(ctx, fmt.Sprintf("k%d", n), 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
	}
	try()
	// The release returned at quorum; its delete on master 0 is answered
	// before the kill, which would otherwise cut it off ("unreachable").
	eventually(t, "the release ran on master 0", func() bool {
		n, err := redis.Int(do(t, srv[0], "EXISTS", stored("k1")), nil)
		return err == nil && n == 0
	})
	require.NoError(t, srv[0].Kill())
	try()
	require.NoError(t, srv[0].Restart(redistest.Ephemeral))
	eventually(t, "master 0 up again", func() bool {
		try()
		return slices.Contains(rec.masters(srv[0].Addr()), "up connection refused")
	})
	assert.Equal(t, []string{"voting voting", "down connection refused", "up connection refused"}, rec.masters(srv[0].Addr()))

	require.NoError(t, srv[1].Pause())
	t.Cleanup(func() { srv[1].Resume() })
	eventually(t, "master 1 silent", func() bool {
		try()
		return slices.Contains(rec.masters(srv[1].Addr()), "silent no reply")
	})
	require.NoError(t, srv[1].Resume())
	eventually(t, "master 1 heard", func() bool {
		try()
		return slices.Contains(rec.masters(srv[1].Addr()), "heard ")
	})
	assert.Equal(t, []string{"voting voting", "down no reply", "silent no reply", "up no reply", "heard "}, rec.masters(srv[1].Addr()))
}

// An ACL user without the lock's keys: the attempt is misconfigured, and
// each master is reported failing once, with NOPERM.
func TestObserver_Misconfigured(t *testing.T) {
	_, urls := aclMasters(t, 3, "~app:*", "&app:*", "+@all", "-@dangerous")
	rec := &recorder{}
	c, err := NewFromAddrs(urls, WithRestartGuard(0), WithNodeTimeout(suiteNodeTimeout), WithLogger(quiet()), WithObserver(rec))
	require.NoError(t, err)
	defer c.Close()
	for range 2 {
		_, err = c.TryLock(context.Background(), "k", time.Second)
		require.ErrorIs(t, err, ErrMisconfigured)
	}
	assert.Equal(t, []Outcome{OutcomeMisconfigured, OutcomeMisconfigured}, rec.outcomes(KindAttempt))
	require.NoError(t, c.Close()) // an attempt returns at quorum: Close waits for the last replies
	for _, u := range urls {
		addr := u[len("redis://app:secret@"):]
		// INFO is denied too: the guard cannot read the master's state.
		assert.Equal(t, []string{"quarantined unreadable", "failing NOPERM"}, rec.masters(addr))
	}
}

// A master whose fence floor is far ahead of the others: they lag, and the
// acquisition raises them.
func TestObserver_FenceRaise(t *testing.T) {
	srv := masters(t, 3)
	rec := &recorder{}
	c := client(t, srv, WithObserver(rec))
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	before := len(rec.of(KindFenceRaise)) // a first grant may raise: the masters seed their counters from their clocks
	floor := suiteNames().Floor("k")
	do(t, srv[0], "INCRBY", floor, 1<<30)
	for range 20 { // until master 0 is in the winning quorum
		l, err = c.TryLock(ctx, "k", 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		if len(rec.of(KindFenceRaise)) > before {
			break
		}
	}
	raises := rec.of(KindFenceRaise)
	require.Len(t, raises, before+1)
	raise := raises[before]
	assert.Equal(t, OutcomeRaised, raise.Outcome)
	assert.Positive(t, raise.Raised)
	assert.GreaterOrEqual(t, raise.Lagging, raise.Raised)
	assert.Equal(t, l.Fence(), raise.Fence)
}

// With no observer the hook allocates nothing and reads no clock.
func TestObserver_Unset_AllocatesNothing(t *testing.T) {
	c, err := NewFromAddrs([]string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	l := &Lock{c: c, req: request{key: "k"}}
	ctx := context.Background()
	fail := errors.New("x")
	allocs := testing.AllocsPerRun(100, func() {
		ctx, obs := c.begin(ctx, OpLock, "k")
		c.observeAttempt(ctx, "k", obs.next(), outcome{err: fail})
		c.observeWake(ctx, "k", true)
		c.observeSilence(0, true)
		l.observeRenew(1, time.Millisecond, fail)
		l.reportLoss(ctx)
		c.stampHeld(l)
		observeCondition(nil, "a", "", "no reply")
		obs.observeHandOver(outcome{}, handedOver)
		var err error = fail
		obs.end(&err)
	})
	assert.Zero(t, allocs)
	assert.True(t, l.heldSince.IsZero(), "no clock read")
}

// lockCheck is a recorder that checks, at each event, that the client holds
// none of its own locks the event could come from: each guard's, each
// master's condition's, the waiters' hub's, and the operation mutex of the
// locks the test names.
type lockCheck struct {
	recorder
	c *Client

	mu     sync.Mutex
	locks  []*Lock
	caught []string // the events that came while a lock was held
}

func (lc *lockCheck) watch(l *Lock) {
	lc.mu.Lock()
	lc.locks = append(lc.locks, l)
	lc.mu.Unlock()
}

// free reports whether m can be taken within 100ms: a mutex the observer's
// own goroutine holds never can; one another goroutine holds for a moment
// can.
func free(m *sync.Mutex) bool {
	for range 100 {
		if m.TryLock() {
			m.Unlock()
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

func (lc *lockCheck) Observe(ctx context.Context, ev Event) {
	var held []string
	for i, n := range lc.c.nodes {
		m := n.(*master)
		srv := []*server{m.servers.own}
		m.servers.by.Range(func(_, s any) bool { srv = append(srv, s.(*server)); return true })
		for _, s := range srv {
			if !free(&s.mu) {
				held = append(held, fmt.Sprintf("guard of master %d", i))
			}
			if !free(&s.cond.mu) {
				held = append(held, fmt.Sprintf("condition of master %d", i))
			}
		}
	}
	if !free(&lc.c.hub.mu) {
		held = append(held, "hub")
	}
	lc.mu.Lock()
	locks := slices.Clone(lc.locks)
	lc.mu.Unlock()
	for _, l := range locks {
		if !free(&l.op) || !free(&l.mu) {
			held = append(held, "lock "+l.req.key)
		}
	}
	if len(held) > 0 {
		lc.mu.Lock()
		lc.caught = append(lc.caught, fmt.Sprintf("%s %s %s: %v", ev.Kind, ev.Op, ev.State, held))
		lc.mu.Unlock()
	}
	lc.recorder.Observe(ctx, ev)
}

// The observer is never called while the client holds a lock of its own:
// not for a guard's change of state, a hand-over within a Release, a loss
// found by Extend, nor any other event.
func TestObserver_NeverCalledUnderTheClientsLocks(t *testing.T) {
	srv := masters(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	guarded := &lockCheck{}
	gc := client(t, srv, WithObserver(guarded), WithRestartGuard(time.Minute), WithNodeTimeout(time.Second))
	guarded.c = gc
	_, err := gc.TryLock(ctx, "k", 10*time.Second)
	require.ErrorIs(t, err, ErrQuarantined)
	require.NotEmpty(t, guarded.of(KindMaster))

	lc := &lockCheck{}
	c := client(t, srv, WithObserver(lc), WithRetry(ConstantBackoff(time.Minute)), WithQueueLease(time.Hour), WithNodeTimeout(time.Second))
	lc.c = c
	first, err := c.TryLock(ctx, "h", 10*time.Second)
	require.NoError(t, err)
	lc.watch(first)
	require.NoError(t, first.Extend(ctx, 10*time.Second))
	got := make(chan *Lock, 1)
	go func() {
		l, err := c.Lock(ctx, "h", 10*time.Second)
		assert.NoError(t, err)
		got <- l
	}()
	eventually(t, "a waiter between attempts", func() bool {
		c.hub.mu.Lock()
		defer c.hub.mu.Unlock()
		q := c.hub.queues["h"]
		return q != nil && len(q.waiters) == 1 && !q.waiters[0].busy && len(lc.of(KindAttempt)) >= 3
	})
	require.NoError(t, first.Release(ctx))
	second := <-got
	require.NotNil(t, second)
	lc.watch(second)
	require.Len(t, lc.of(KindHandOver), 1)
	deleteHeld(t, "h", srv...)
	require.ErrorIs(t, second.Extend(ctx, 10*time.Second), ErrLockLost)
	require.Len(t, lc.of(KindLost), 1)

	assert.Empty(t, guarded.caught)
	assert.Empty(t, lc.caught)
}

// Masters that vote while the guard is partly blind there are degraded,
// each reported once, with why.
func TestObserver_Degraded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rules  []string
		opts   []Option
		events []string
	}{
		{"INFO denied, trusted as asked", []string{"~*", "&*", "+@all", "-info"}, []Option{WithTrustUnreadable()},
			[]string{"degraded unreadable-trusted"}},
		{"CONFIG denied", []string{"~*", "&*", "+@all", "-config"}, nil,
			[]string{"voting voting", "degraded config-unreadable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, urls := aclMasters(t, 3, tc.rules...)
			rec := &recorder{}
			c, err := NewFromAddrs(urls, append([]Option{WithRestartGuard(0), WithNodeTimeout(suiteNodeTimeout), WithLogger(quiet()), WithObserver(rec)}, tc.opts...)...)
			require.NoError(t, err)
			defer c.Close()
			for i := range 3 {
				l, err := c.TryLock(context.Background(), fmt.Sprintf("k%d", i), 10*time.Second)
				require.NoError(t, err)
				require.NoError(t, l.Release(context.Background()))
			}
			// Calls return at quorum: Close waits for the last master's replies.
			require.NoError(t, c.Close())
			for _, u := range urls {
				assert.Equal(t, tc.events, rec.masters(u[len("redis://app:secret@"):]))
			}
		})
	}
}
