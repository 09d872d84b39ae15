package redlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// behaviour is how a fake master answers.
type behaviour int

const (
	healthy behaviour = iota // acts as the Lua scripts do
	foreign                  // the key is held by another owner
	broken                   // every call fails
	hang                     // an acquire answers only at its deadline, and lands anyway
)

func (b behaviour) String() string { return [...]string{"ok", "held", "err", "hang"}[b] }

var errBroken = errors.New("connection refused")

// fakeNode is an in-memory master with the semantics of the Lua scripts.
type fakeNode struct {
	name string
	clk  clock.Clock

	mu       sync.Mutex
	mode     behaviour
	keys     map[string]*fakeKey
	sems     map[string]*fakeSem    // semaphores' keys (see fake_permit_test.go)
	counters map[string]int64       // a reentrant lock's fence record
	records  map[string]plainRecord // a plain lock's fence record
	floor    int64
	voided   map[string]bool // tombstones of rolled-back attempts
	calls    []fakeCall
	h        health
	advance  time.Duration // an acquire moves the fake clock on by this first
	noRaise  bool          // raiseFence fails
	behind   time.Duration // how far the master's clock is behind the client's: it caps proposals
	other    string        // the holder a foreign master reports; "foreign" if empty
	gate     chan struct{} // if set, a release waits for it, then fails on a done ctx as a pool would
	fromGate chan struct{} // if set, a hand-over acquire waits for it
	noFrom   bool          // a hand-over acquire fails
	busy     int           // calls under way, not counting hung acquires
	mute     bool          // silent reports true, as for a master that answers nothing
	// answerAfter: an answer to an acquire waits until these masters
	// have answered as many acquires, so that a round sees their answers
	// first (bounded: one second).
	answerAfter []*fakeNode
}

type fakeKey struct {
	token string          // plain lock
	owner string          // reentrant lock
	holds map[string]bool // reentrant holds
	until time.Time
}

// plainRecord is a plain lock's fence record: the count of its grant,
// raised to its fence, and the token it names.
type plainRecord struct {
	count int64
	token string
}

type fakeCall struct {
	op, key, token string
}

func newFakeNode(name string, clk clock.Clock, mode behaviour) *fakeNode {
	return &fakeNode{name: name, clk: clk, mode: mode, keys: map[string]*fakeKey{}, counters: map[string]int64{}, records: map[string]plainRecord{}, voided: map[string]bool{}}
}

func (f *fakeNode) addr() string { return f.name }

func (f *fakeNode) silent(time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mute
}

func (f *fakeNode) health(string) health {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.h
}

func (f *fakeNode) subscribe(context.Context) (driver.Subscription, error) { return nil, errNoPubSub }

func (f *fakeNode) setMode(m behaviour) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = m
}

// record logs a call and returns how to answer it. The caller must call
// f.finish when done, unless it hangs.
func (f *fakeNode) record(op, key, token string) behaviour {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fakeCall{op, key, token})
	if !(op == "acquire" && f.mode == hang) {
		f.busy++
	}
	return f.mode
}

// waitForOthers waits, up to a second, until every master of answerAfter
// has answered as many acquires as f has been sent, and a moment more for
// the answers to reach the fan-out.
func (f *fakeNode) waitForOthers() {
	if len(f.answerAfter) == 0 {
		return
	}
	n := len(f.callsOf("acquire"))
	for try := 0; try < 1000; try++ {
		all := true
		for _, o := range f.answerAfter {
			o.mu.Lock()
			if o.busy > 0 || len(o.callsOfLocked("acquire")) < n {
				all = false
			}
			o.mu.Unlock()
		}
		if all {
			time.Sleep(20 * time.Millisecond) // their answers reach the fan-out
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (f *fakeNode) finish() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.busy--
}

// allAnswered reports whether every call that will answer before a deadline has.
func allAnswered(fakes []*fakeNode) bool {
	for _, f := range fakes {
		f.mu.Lock()
		b := f.busy
		f.mu.Unlock()
		if b > 0 {
			return false
		}
	}
	return true
}

// callsOf returns the tokens of the calls of one kind.
func (f *fakeNode) callsOf(op string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.callsOfLocked(op)
}

// callsOfLocked is callsOf with f.mu held.
func (f *fakeNode) callsOfLocked(op string) []string {
	var out []string
	for _, c := range f.calls {
		if c.op == op {
			out = append(out, c.token)
		}
	}
	return out
}

// live returns the key if it has not expired. f.mu must be held.
func (f *fakeNode) live(key string) *fakeKey {
	k := f.keys[key]
	if k != nil && !f.clk.Now().Before(k.until) {
		delete(f.keys, key)
		return nil
	}
	return k
}

func (f *fakeNode) holder(key string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if k := f.live(key); k != nil {
		if k.owner != "" {
			return "owner:" + k.owner
		}
		return k.token
	}
	return ""
}

func (f *fakeNode) holdsToken(key, token string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.live(key)
	return k != nil && (k.token == token || k.holds[token])
}

// voidedToken reports whether the master keeps a tombstone for token.
func (f *fakeNode) voidedToken(token string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.voided[token]
}

func (k *fakeKey) heldBy(r request) bool {
	if r.owner == "" {
		return k.owner == "" && k.token == r.token
	}
	return k.owner == r.owner && k.holds[r.token]
}

// startAcquire answers from a goroutine of its own, as a connection's
// reader would.
func (f *fakeNode) startAcquire(ctx context.Context, r request, p *pending[scripts.Grant]) {
	go func() { p.to.take(f.acquire(ctx, r)) }()
}

func (f *fakeNode) startExtend(ctx context.Context, r request, p *pending[scripts.Extended]) {
	go func() { p.to.take(f.extend(ctx, r)) }()
}

func (f *fakeNode) startRaise(ctx context.Context, r request, fence int64, p *pending[bool]) {
	go func() { p.to.take(f.raiseFence(ctx, r, fence)) }()
}

func (f *fakeNode) startInspect(ctx context.Context, key, token, owner string, p *pending[scripts.State]) {
	go func() { p.to.take(f.inspect(ctx, key, token, owner)) }()
}

func (f *fakeNode) startRelease(ctx context.Context, r request, p *pending[scripts.Released]) {
	go func() { p.to.take(f.release(ctx, r)) }()
}

func (f *fakeNode) acquire(ctx context.Context, r request) (scripts.Grant, error) {
	mode := f.record("acquire", r.key, r.token)
	if mode != hang {
		defer f.finish()
	}
	if r.from != "" {
		if f.fromGate != nil {
			<-f.fromGate
		}
		if f.noFrom {
			return scripts.Grant{}, errBroken
		}
	}
	if mode == healthy || mode == foreign {
		f.waitForOthers()
	}
	switch mode {
	case foreign:
		h := f.other
		if h == "" {
			h = "foreign"
		}
		return scripts.Grant{PTTL: 5 * time.Second, Holder: h}, nil
	case broken:
		return scripts.Grant{}, errBroken
	case hang:
		<-ctx.Done()
		f.apply(r) // the command ran; only the reply was late
		return scripts.Grant{}, ctx.Err()
	}
	if f.advance > 0 {
		f.clk.(*clock.Fake).Advance(f.advance)
	}
	return f.apply(r), nil
}

func (f *fakeNode) apply(r request) scripts.Grant {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.read {
		return f.applyRead(r)
	}
	if r.permits > 0 {
		return f.applyPermit(r)
	}
	if r.set != nil {
		return f.applyAll(r)
	}
	now := f.clk.Now()
	if pttl, ok := f.semHolds(r.key); ok {
		return scripts.Grant{PTTL: pttl, Holder: scripts.Unknown}
	}
	k := f.live(r.key)
	if f.voided[r.token] {
		// As acquire.lua: a hand-over that finds its lock names the holder.
		if k != nil && r.from != "" && k.owner == "" && k.token == r.from {
			return scripts.Grant{PTTL: scripts.RolledBack, Holder: k.token}
		}
		return scripts.Grant{PTTL: scripts.RolledBack}
	}
	if k == nil {
		k = &fakeKey{until: now.Add(r.ttl)}
		if r.owner == "" {
			k.token = r.token
		} else {
			k.owner, k.holds = r.owner, map[string]bool{r.token: true}
		}
		f.keys[r.key] = k
		c := f.count(r)
		if r.owner != "" {
			f.counters[r.key] = c
		} else {
			f.records[r.key] = plainRecord{c, r.token}
		}
		return scripts.Grant{OK: true, Counter: c}
	}
	switch {
	case r.owner == "" && r.from != "" && k.owner == "" && k.token == r.from:
		k.token, k.until = r.token, now.Add(r.ttl)
		c := f.count(r)
		f.records[r.key] = plainRecord{c, r.token}
		return scripts.Grant{OK: true, Counter: c, TookOver: true}
	case r.owner == "" && k.token == r.token:
		return scripts.Grant{OK: true, Counter: f.floor} // a plain retry reports the floor, at least its count
	case r.owner != "" && k.owner == r.owner:
		k.holds[r.token] = true
		if until := now.Add(r.ttl); until.After(k.until) {
			k.until = until
		}
		c := f.counters[r.key]
		if c == 0 {
			c = f.floor
		}
		return scripts.Grant{OK: true, Counter: c}
	}
	if k.owner != "" {
		return scripts.Grant{PTTL: k.until.Sub(now), Holder: "owner:" + k.owner}
	}
	return scripts.Grant{PTTL: k.until.Sub(now), Holder: k.token}
}

// count is acquire.lua's count of a grant: one above the floor, or the proposal where it
// is larger; the floor follows. The caller holds f.mu.
func (f *fakeNode) count(r request) int64 {
	f.floor = f.proposed(f.floor+1, r.propose)
	return f.floor
}

// proposed is acquire.lua's proposal: the proposal p where it is above the
// count c, capped at the master's clock seed (its clock, behind the client's
// by f.behind, in milliseconds times 1024).
func (f *fakeNode) proposed(c, p int64) int64 {
	if p <= c {
		return c
	}
	return max(c, min(p, f.clk.Now().Add(-f.behind).UnixMilli()*1024))
}

func (f *fakeNode) extend(ctx context.Context, r request) (scripts.Extended, error) {
	defer f.finish()
	if f.record("extend", r.key, r.token) == broken {
		return scripts.Lapsed, errBroken
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.permits > 0 {
		return f.extendPermit(r), nil
	}
	if r.set != nil {
		return f.extendAll(r), nil
	}
	if _, ok := f.semHolds(r.key); ok {
		return scripts.Lapsed, nil
	}
	k := f.live(r.key)
	if k == nil {
		return scripts.Vacant, nil
	}
	if !k.heldBy(r) {
		return scripts.Lapsed, nil
	}
	if until := f.clk.Now().Add(r.ttl); until.After(k.until) {
		k.until = until
	}
	return scripts.Renewed, nil
}

func (f *fakeNode) release(ctx context.Context, r request) (scripts.Released, error) {
	defer f.finish()
	if f.record("release", r.key, r.token) == broken {
		return scripts.NotHeld, errBroken
	}
	if f.gate != nil {
		<-f.gate
		if err := ctx.Err(); err != nil {
			return scripts.NotHeld, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.rollback || r.tombstone {
		f.voided[r.token] = true
	}
	if r.permits > 0 {
		return f.releasePermit(r), nil
	}
	if r.set != nil {
		return f.releaseAll(r), nil
	}
	k := f.live(r.key)
	if k == nil || !k.heldBy(r) {
		return scripts.NotHeld, nil
	}
	if r.fence != 0 {
		f.raise(r, r.fence)
	}
	if r.owner != "" {
		delete(k.holds, r.token)
		if len(k.holds) > 0 {
			return scripts.StillHeld, nil
		}
	}
	delete(f.keys, r.key)
	if rec, ok := f.records[r.key]; ok && r.owner == "" && rec.token == r.token {
		delete(f.records, r.key) // a plain lock's record goes with it (release.lua)
	}
	return scripts.Freed, nil
}

// leave does nothing: the fake keeps no waiting queue, which only the
// scripts on real masters do (see the queue's tests in queue_test.go).
func (f *fakeNode) leave(context.Context, string, string, time.Duration) error { return nil }

func (f *fakeNode) raiseFence(ctx context.Context, r request, fence int64) (bool, error) {
	defer f.finish()
	if f.record("fence", r.key, r.token) == broken || f.noRaise {
		return false, errBroken
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.permits > 0 {
		if !f.holdsPermit(r.key, r.token) {
			return false, nil
		}
		f.raise(r, fence)
		return true, nil
	}
	if r.set != nil {
		return f.raiseAll(r, fence), nil
	}
	k := f.live(r.key)
	if k == nil || !k.heldBy(r) {
		return false, nil
	}
	f.raise(r, fence)
	return true, nil
}

// raise is lib.lua's raiseCounter: the floor, and the lock's record (a
// plain lock's only when it names the token). The caller holds f.mu.
func (f *fakeNode) raise(r request, fence int64) {
	if r.owner != "" {
		f.counters[r.key] = max(f.counters[r.key], fence)
	} else if rec, ok := f.records[r.key]; ok && rec.token == r.token && rec.count < fence {
		f.records[r.key] = plainRecord{fence, r.token}
	}
	f.floor = max(f.floor, fence)
}

func (f *fakeNode) inspect(ctx context.Context, key, token, owner string) (scripts.State, error) {
	defer f.finish()
	if f.record("inspect", key, "") == broken {
		return scripts.State{}, errBroken
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := scripts.State{Counter: f.floor, PTTL: scripts.NoKey}
	if k := f.live(key); k != nil {
		s.PTTL = k.until.Sub(f.clk.Now())
		if k.owner != "" {
			s.Holder, s.Holds = "owner:"+k.owner, len(k.holds)
			if c := f.counters[key]; c != 0 {
				s.Counter = c
			}
		} else {
			s.Holder, s.Holds = k.token, 1
			if rec, ok := f.records[key]; ok && rec.token == k.token {
				s.Counter = rec.count
			}
		}
		s.Held = token != "" && k.heldBy(request{token: token, owner: owner})
	}
	return s, nil
}

// quiet is a logger for tests.
func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newFakeClient returns a client over fake masters with the given behaviours,
// on a fake clock, with the restart guard on a fixed window.
func newFakeClient(t *testing.T, modes []behaviour, opts ...Option) (*Client, []*fakeNode, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Unix(1_000_000, 0))
	opts = append([]Option{WithClock(clk), WithLogger(quiet())}, opts...)
	c, err := build(len(modes), opts)
	require.NoError(t, err)
	fakes := make([]*fakeNode, len(modes))
	nodes := make([]node, len(modes))
	for i, m := range modes {
		fakes[i] = newFakeNode(fmt.Sprintf("fake%d", i), clk, m)
		nodes[i] = fakes[i]
	}
	c.attach(nodes)
	t.Cleanup(func() { c.Close() })
	return c, fakes, clk
}

// drive advances the fake clock by step whenever something waits on it and
// every fake master has answered what it will answer, until done is closed.
// It is bounded in rounds and in real time.
func drive(t *testing.T, clk *clock.Fake, fakes []*fakeNode, step time.Duration, done <-chan struct{}) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for range 20_000 {
		select {
		case <-done:
			return
		case <-deadline:
			t.Fatal("the code under test never finished")
		default:
		}
		if clk.Timers() > 0 && allAnswered(fakes) {
			// Let the answers reach the fan-out, whose goroutines still
			// have to pass them on once the fakes are done; a loaded
			// machine can hold them back for a while (2 ms was seen to be
			// too short under -race with other packages' tests beside).
			time.Sleep(20 * time.Millisecond)
			if allAnswered(fakes) {
				clk.Advance(step)
			}
		}
		time.Sleep(50 * time.Microsecond)
	}
	t.Fatal("the code under test did not finish within the rounds allowed")
}
