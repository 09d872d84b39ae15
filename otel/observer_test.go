package otel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/otel"
	"github.com/quorumlock/quorumlock/redlock"
)

// rig is an Observer on the real SDK: a ManualReader for the metrics, a
// SpanRecorder for the spans.
type rig struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tracer trace.Tracer
	obs    *otel.Observer
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	t.Cleanup(func() {
		mp.Shutdown(context.Background())
		tp.Shutdown(context.Background())
	})
	r.tracer = tp.Tracer("test")
	obs, err := otel.New(otel.WithMeterProvider(mp), otel.WithTracerProvider(tp))
	require.NoError(t, err)
	t.Cleanup(func() { obs.Close() })
	r.obs = obs
	return r
}

// client returns a client over addrs observed by the rig.
func (r *rig) client(t *testing.T, addrs []string, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.NewFromAddrs(addrs, append([]redlock.Option{redlock.WithLogger(quiet()), redlock.WithObserver(r.obs)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// metrics collects every instrument of the observer's scope, by name.
func (r *rig) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otel.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// attrs renders an attribute set as "k=v,k=v", sorted by key.
func attrs(s attribute.Set) string {
	var parts []string
	for _, kv := range s.ToSlice() {
		parts = append(parts, string(kv.Key)+"="+kv.Value.Emit())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// points returns a sum's or a gauge's points, or a histogram's counts, by
// attribute set, and checks the instrument's unit.
func points(t *testing.T, ms map[string]metricdata.Metrics, name, unit string) map[string]int64 {
	t.Helper()
	m, ok := ms[name]
	require.True(t, ok, "no instrument %s", name)
	assert.Equal(t, unit, m.Unit, "%s's unit", name)
	out := map[string]int64{}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out[attrs(p.Attributes)] = p.Value
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			out[attrs(p.Attributes)] = p.Value
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out[attrs(p.Attributes)] = int64(p.Count)
		}
	default:
		t.Fatalf("%s: unexpected data %T", name, m.Data)
	}
	return out
}

// ended returns the spans ended so far.
func (r *rig) ended() []sdktrace.ReadOnlySpan { return r.spans.Ended() }

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

const (
	outcome = "quorumlock.outcome="
	master  = "quorumlock.master.address="
)

// A contended key: a TryLock refused, a Lock that waits for the holder's
// release, and the releases; every instrument with its unit and exact
// attribute sets, and a span per call, child of the caller's, with an
// event per attempt that carries the quorum's votes.
func TestObserver_ContendedKey(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.Ephemeral)
	addrs := redistest.Addrs(srv)
	r := newRig(t)
	c := r.client(t, addrs, redlock.WithRestartGuard(0))
	holder, err := redlock.NewFromAddrs(addrs, redlock.WithRestartGuard(0), redlock.WithLogger(quiet()))
	require.NoError(t, err)
	defer holder.Close()
	ctx, root := r.tracer.Start(context.Background(), "caller")
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()

	held, err := holder.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	_, err = c.TryLock(ctx, "k", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	got := make(chan *redlock.Lock, 1)
	go func() {
		l, err := c.Lock(ctx, "k", 10*time.Second)
		assert.NoError(t, err)
		got <- l
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, held.Release(ctx))
	l := <-got
	require.NotNil(t, l)
	ms := r.metrics(t)
	assert.Equal(t, map[string]int64{"": 1}, points(t, ms, otel.MetricHeld, "{lock}"))
	require.NoError(t, l.Release(ctx))
	root.End()

	ms = r.metrics(t)
	attempts := points(t, ms, otel.MetricAttempts, "{attempt}")
	assert.Equal(t, int64(1), attempts[outcome+"obtained"])
	assert.GreaterOrEqual(t, attempts[outcome+"held"], int64(2), "the TryLock's and the Lock's first")
	assert.Equal(t, []string{outcome + "held", outcome + "obtained"}, keys(attempts))
	assert.Equal(t, attempts, points(t, ms, otel.MetricAcquireDuration, "s"), "a duration per attempt")
	assert.Equal(t, map[string]int64{
		"quorumlock.operation=trylock," + outcome + "held":  1,
		"quorumlock.operation=lock," + outcome + "obtained": 1,
	}, points(t, ms, otel.MetricWaitDuration, "s"))
	assert.Equal(t, map[string]int64{outcome + "released": 1}, points(t, ms, otel.MetricReleases, "{release}"))
	assert.Equal(t, map[string]int64{"": 1}, points(t, ms, otel.MetricHeldDuration, "s"))
	assert.Equal(t, map[string]int64{"": 0}, points(t, ms, otel.MetricHeld, "{lock}"))
	wake := points(t, ms, otel.MetricWakeups, "{wakeup}")
	assert.Positive(t, wake[outcome+"woken"], "the release's announcement woke the waiter")
	for _, name := range []string{otel.MetricLosses, otel.MetricHandovers, otel.MetricExtensions} {
		assert.NotContains(t, ms, name, "nothing of that happened")
	}
	for name, m := range ms {
		for series := range points(t, ms, name, m.Unit) {
			assert.NotContains(t, series, "=k", "%s: the key is no metric attribute", name)
			assert.NotContains(t, series, otel.AttrKey, name)
		}
	}
	state := points(t, ms, otel.MetricMasterState, "{master}")
	quar := points(t, ms, otel.MetricMasterQuarantined, "{master}")
	for _, a := range addrs {
		assert.Equal(t, int64(1), state[master+a+",quorumlock.master.state=up"])
		assert.Equal(t, int64(0), state[master+a+",quorumlock.master.state=down"])
		assert.Equal(t, int64(0), quar[master+a])
	}
	assert.Len(t, state, 4*len(addrs), "a point per master and state")

	spans := r.ended()
	var names []string
	for _, s := range spans {
		if s.Name() == "caller" {
			continue
		}
		names = append(names, s.Name())
		assert.Equal(t, root.SpanContext().SpanID(), s.Parent().SpanID(), "%s is the caller's child", s.Name())
		assert.Equal(t, root.SpanContext().TraceID(), s.SpanContext().TraceID())
		assert.Contains(t, s.Attributes(), attribute.String(otel.AttrKey, "k"))
	}
	assert.Equal(t, []string{otel.SpanTryLock, otel.SpanLock, otel.SpanRelease}, names)
	lockSpan := spans[1]
	assert.Contains(t, lockSpan.Attributes(), attribute.String(otel.AttrOutcome, "obtained"))
	evs := lockSpan.Events()
	var tries []sdktrace.Event
	for _, e := range evs {
		if e.Name == "attempt" {
			tries = append(tries, e)
		}
	}
	require.GreaterOrEqual(t, len(tries), 2)
	last := tries[len(tries)-1]
	assert.Contains(t, last.Attributes, attribute.String(otel.AttrOutcome, "obtained"))
	assert.Contains(t, last.Attributes, attribute.Int(otel.AttrMasters, 3))
	assert.Contains(t, last.Attributes, attribute.Int(otel.AttrQuorum, 2))
	assert.Contains(t, tries[0].Attributes, attribute.String(otel.AttrOutcome, "held"))
	refused := 0
	for _, kv := range tries[0].Attributes {
		if kv.Key == otel.AttrRefused {
			refused = int(kv.Value.AsInt64())
		}
	}
	assert.GreaterOrEqual(t, refused, 2, "the masters that refused the first attempt")
	assert.Equal(t, "Error", spans[0].Status().Code.String(), "a TryLock not obtained")
}

func keys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A master restarted within the guard window is quarantined: the gauge says
// so for it alone, until its window ends, and the locks still go through on
// the others.
func TestObserver_RestartedMasterIsQuarantined(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.Ephemeral)
	addrs := redistest.Addrs(srv)
	r := newRig(t)
	const window = 2 * time.Second
	c := r.client(t, addrs, redlock.WithRestartGuard(window))
	ctx := context.Background()

	// Fresh masters are young: each is quarantined until its uptime passes the window.
	_, err := c.TryLock(ctx, "k", time.Second)
	require.ErrorIs(t, err, redlock.ErrQuarantined)
	quar := points(t, r.metrics(t), otel.MetricMasterQuarantined, "{master}")
	for _, a := range addrs {
		assert.Equal(t, int64(1), quar[master+a])
	}
	n := 0 // a key of its own each time: a release returns at a quorum, and a delete may still be on its way
	eventually(t, "the masters age past the window", func() bool {
		n++
		l, err := c.TryLock(ctx, fmt.Sprintf("k%d", n), time.Second)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			return false
		}
		require.NoError(t, l.Release(ctx))
		return true
	})

	require.NoError(t, srv[0].Kill())
	require.NoError(t, srv[0].Restart(redistest.Ephemeral))
	eventually(t, "master 0 seen restarted", func() bool {
		n++
		l, err := c.TryLock(ctx, fmt.Sprintf("k%d", n), time.Second)
		require.NoError(t, err, "the other two vote")
		require.NoError(t, l.Release(ctx))
		return points(t, r.metrics(t), otel.MetricMasterQuarantined, "{master}")[master+addrs[0]] == 1
	})
	ms := r.metrics(t)
	quar = points(t, ms, otel.MetricMasterQuarantined, "{master}")
	assert.Equal(t, map[string]int64{master + addrs[0]: 1, master + addrs[1]: 0, master + addrs[2]: 0}, quar)
	changes := points(t, ms, otel.MetricMasterChanges, "{change}")
	restarted := func(a string) string {
		return master + a + ",quorumlock.master.reason=restarted,quorumlock.master.state=quarantined"
	}
	assert.Equal(t, int64(2), changes[restarted(addrs[0])], "fresh, then restarted")
	assert.Equal(t, int64(1), changes[restarted(addrs[1])])
	assert.Equal(t, int64(1), changes[restarted(addrs[2])])
	assert.Positive(t, points(t, ms, otel.MetricAttempts, "{attempt}")[outcome+"quarantined"])
}

// A SIGSTOPped master is silent: the state gauge says so, and the locks go
// through on the others.
func TestObserver_PausedMasterIsSilent(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.Ephemeral)
	addrs := redistest.Addrs(srv)
	r := newRig(t)
	c := r.client(t, addrs, redlock.WithRestartGuard(0))
	ctx := context.Background()
	n := 0
	try := func() {
		// A key of its own each time: a release returns at a quorum, and
		// the delete on a master left out of it may still be on its way.
		n++
		l, err := c.TryLock(ctx, fmt.Sprintf("k%d", n), 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
	}
	try()
	require.NoError(t, srv[1].Pause())
	t.Cleanup(func() { srv[1].Resume() })
	silent := master + addrs[1] + ",quorumlock.master.state=silent"
	eventually(t, "master 1 silent", func() bool {
		try()
		return points(t, r.metrics(t), otel.MetricMasterState, "{master}")[silent] == 1
	})
	ms := r.metrics(t)
	state := points(t, ms, otel.MetricMasterState, "{master}")
	assert.Equal(t, int64(0), state[master+addrs[1]+",quorumlock.master.state=up"])
	assert.Equal(t, int64(1), state[master+addrs[0]+",quorumlock.master.state=up"])
	assert.Equal(t, int64(1), state[master+addrs[2]+",quorumlock.master.state=up"])
	changes := points(t, ms, otel.MetricMasterChanges, "{change}")
	assert.Equal(t, int64(1), changes[master+addrs[1]+",quorumlock.master.reason=no reply,quorumlock.master.state=silent"])
	assert.Equal(t, int64(1), changes[master+addrs[1]+",quorumlock.master.reason=no reply,quorumlock.master.state=down"])
	attempts := points(t, ms, otel.MetricAttempts, "{attempt}")
	assert.Equal(t, []string{outcome + "obtained"}, keys(attempts), "two masters of three suffice")
	require.NoError(t, srv[1].Resume())
}

// A lock whose key was deleted on every master is lost: Extend finds it,
// the loss is counted once, the held count goes back to zero.
func TestObserver_LockLost(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.Ephemeral)
	r := newRig(t)
	c := r.client(t, redistest.Addrs(srv), redlock.WithRestartGuard(0))
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	for _, s := range srv {
		_, err := s.Do("DEL", "k")
		require.NoError(t, err)
	}
	require.ErrorIs(t, l.Extend(ctx, 10*time.Second), redlock.ErrLockLost)
	require.ErrorIs(t, l.Release(ctx), redlock.ErrLockLost)
	ms := r.metrics(t)
	assert.Equal(t, map[string]int64{"": 1}, points(t, ms, otel.MetricLosses, "{lock}"))
	assert.Equal(t, map[string]int64{"": 0}, points(t, ms, otel.MetricHeld, "{lock}"))
	assert.Equal(t, map[string]int64{"quorumlock.auto=false," + outcome + "lost": 1}, points(t, ms, otel.MetricExtensions, "{extension}"))
	assert.Equal(t, map[string]int64{outcome + "lost": 1}, points(t, ms, otel.MetricReleases, "{release}"))
	assert.NotContains(t, ms, otel.MetricHeldDuration, "no lock was released while held")
	var extend sdktrace.ReadOnlySpan
	for _, s := range r.ended() {
		if s.Name() == otel.SpanExtend {
			extend = s
		}
	}
	require.NotNil(t, extend)
	assert.Equal(t, "Error", extend.Status().Code.String())
	assert.Contains(t, extend.Attributes(), attribute.String(otel.AttrOutcome, "lost"))
	var events []string
	for _, e := range extend.Events() {
		events = append(events, e.Name)
	}
	assert.Equal(t, []string{"lost", "exception"}, events)
}

// An ACL user without the lock's keys: every attempt is misconfigured, and
// each master is failing with NOPERM (and quarantined: INFO is denied too).
func TestObserver_MisconfiguredACL(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.Ephemeral, "--user", "app", "on", ">secret", "~app:*", "&app:*", "+@all", "-@dangerous")
	var urls []string
	for _, s := range srv {
		urls = append(urls, "redis://app:secret@"+s.Addr())
	}
	r := newRig(t)
	c := r.client(t, urls, redlock.WithRestartGuard(0))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Lock(ctx, "k", time.Second)
	require.ErrorIs(t, err, redlock.ErrMisconfigured)
	ms := r.metrics(t)
	assert.Equal(t, map[string]int64{outcome + "misconfigured": 1}, points(t, ms, otel.MetricAttempts, "{attempt}"))
	assert.Equal(t, map[string]int64{"quorumlock.operation=lock," + outcome + "misconfigured": 1}, points(t, ms, otel.MetricWaitDuration, "s"))
	state := points(t, ms, otel.MetricMasterState, "{master}")
	changes := points(t, ms, otel.MetricMasterChanges, "{change}")
	quar := points(t, ms, otel.MetricMasterQuarantined, "{master}")
	for _, s := range srv {
		a := s.Addr()
		assert.Equal(t, int64(1), state[master+a+",quorumlock.master.state=failing"])
		assert.Equal(t, int64(1), changes[master+a+",quorumlock.master.reason=NOPERM,quorumlock.master.state=failing"])
		assert.Equal(t, int64(1), changes[master+a+",quorumlock.master.reason=unreadable,quorumlock.master.state=quarantined"])
		assert.Equal(t, int64(1), quar[master+a])
	}
	assert.Len(t, changes, 2*len(srv))
}

// Do: a span for the call, the Lock and the Release within it as its
// children, and the function's own spans below it.
func TestObserver_DoSpans(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.Ephemeral)
	r := newRig(t)
	c := r.client(t, redistest.Addrs(srv), redlock.WithRestartGuard(0))
	err := c.Do(context.Background(), "k", 10*time.Second, func(ctx context.Context) error {
		_, s := r.tracer.Start(ctx, "work")
		s.End()
		return errors.New("fn failed")
	})
	require.EqualError(t, err, "fn failed")
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range r.ended() {
		byName[s.Name()] = s
	}
	do := byName[otel.SpanDo]
	require.NotNil(t, do)
	assert.False(t, do.Parent().IsValid(), "a root: the caller had no span")
	for _, name := range []string{otel.SpanLock, otel.SpanRelease, "work"} {
		require.Contains(t, byName, name)
		assert.Equal(t, do.SpanContext().SpanID(), byName[name].Parent().SpanID(), "%s is Do's child", name)
	}
	assert.Contains(t, do.Attributes(), attribute.String(otel.AttrOutcome, "failed"))
}

func TestNew_NilProvider_IsInvalid(t *testing.T) {
	for _, opt := range []otel.Option{otel.WithMeterProvider(nil), otel.WithTracerProvider(nil), nil} {
		_, err := otel.New(opt)
		assert.ErrorIs(t, err, redlock.ErrInvalid)
	}
}

// An RWLock's read holds have spans of their own; its write hold is a
// lock's.
func TestObserver_RWLockSpans(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.Ephemeral)
	r := newRig(t)
	c := r.client(t, redistest.Addrs(srv), redlock.WithRestartGuard(0))
	rw, err := c.RWLock("k")
	require.NoError(t, err)
	ctx := context.Background()
	a, err := rw.TryRLock(ctx, 10*time.Second)
	require.NoError(t, err)
	b, err := rw.RLock(ctx, 10*time.Second)
	require.NoError(t, err)
	_, err = rw.TryLock(ctx, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	var names []string
	for _, s := range r.ended() {
		names = append(names, s.Name())
	}
	assert.Equal(t, []string{otel.SpanTryRLock, otel.SpanRLock, otel.SpanTryLock}, names)
	require.NoError(t, a.Release(ctx))
	require.NoError(t, b.Release(ctx))
}

// A semaphore's permits have spans of their own.
func TestObserver_SemaphoreSpans(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.Ephemeral)
	r := newRig(t)
	c := r.client(t, redistest.Addrs(srv), redlock.WithRestartGuard(0))
	s, err := c.Semaphore("k", 1)
	require.NoError(t, err)
	ctx := context.Background()
	a, err := s.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, a.Release(ctx))
	b, err := s.Acquire(ctx, 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, b.Release(ctx))
	var names []string
	for _, sp := range r.ended() {
		names = append(names, sp.Name())
	}
	assert.Equal(t, []string{otel.SpanTryAcquire, otel.SpanRelease, otel.SpanAcquire, otel.SpanRelease}, names)
}
