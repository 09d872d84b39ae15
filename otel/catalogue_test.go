package otel_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/lockmetrics"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/otel"
	"github.com/quorumlock/quorumlock/redlock"
)

// The package's exported names are the catalogue's.
func TestNames_AreTheCatalogues(t *testing.T) {
	names := []string{otel.MetricAttempts, otel.MetricAcquireDuration, otel.MetricWaitDuration,
		otel.MetricExtensions, otel.MetricReleases, otel.MetricHeldDuration, otel.MetricHeld, otel.MetricLosses,
		otel.MetricHandovers, otel.MetricWakeups, otel.MetricFenceRaises, otel.MetricMasterChanges,
		otel.MetricMasterState, otel.MetricMasterQuarantined}
	var cat []string
	for _, in := range lockmetrics.Catalogue() {
		cat = append(cat, in.Name)
	}
	assert.Equal(t, cat, names)
	assert.Equal(t, []string{lockmetrics.AttrOutcome, lockmetrics.AttrOperation, lockmetrics.AttrAuto,
		lockmetrics.AttrMaster, lockmetrics.AttrState, lockmetrics.AttrReason},
		[]string{otel.AttrOutcome, otel.AttrOperation, otel.AttrAuto, otel.AttrMaster, otel.AttrState, otel.AttrReason})
	assert.Equal(t, []redlock.MasterState{redlock.MasterUp, redlock.MasterDown, redlock.MasterFailing, redlock.MasterSilent}, otel.States())
}

// tee hands every call and event to each observer in turn.
type tee []redlock.Observer

func (t tee) Start(ctx context.Context, op redlock.Op, key string) context.Context {
	for _, o := range t {
		ctx = o.Start(ctx, op, key)
	}
	return ctx
}

func (t tee) Observe(ctx context.Context, ev redlock.Event) {
	for _, o := range t {
		o.Observe(ctx, ev)
	}
}

// flatten renders a scrape's quorumlock_ series, one "name{labels}" per
// series (a histogram's buckets, sum and count each), without the labels
// the exporter adds for the scope, and their values.
func flatten(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range fams {
		if !strings.HasPrefix(name, "quorumlock_") {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				if !strings.HasPrefix(lp.GetName(), "otel_scope_") {
					labels = append(labels, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
				}
			}
			slices.Sort(labels)
			l := strings.Join(labels, ",")
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name+"{"+l+"}"] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name+"{"+l+"}"] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[name+"_count{"+l+"}"] = float64(h.GetSampleCount())
				out[name+"_sum{"+l+"}"] = math.Round(h.GetSampleSum()*1e6) / 1e6
				for _, b := range h.GetBucket() {
					out[fmt.Sprintf("%s_bucket{%s,le=%v}", name, l, b.GetUpperBound())] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return out
}

// The command's exposition (lockmetrics.Registry) and the OpenTelemetry
// Prometheus exporter's, fed the same events on real masters, scrape the
// same: the same series, names, labels and values.
func TestRegistry_ScrapesAsTheOTelExporter(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.Ephemeral)
	obs, otelURL := servePrometheus(t)
	reg := lockmetrics.NewRegistry()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: reg}
	go hs.Serve(ln)
	defer hs.Close()

	c, err := redlock.NewFromAddrs(redistest.Addrs(srv), redlock.WithObserver(tee{obs, reg}),
		redlock.WithRestartGuard(0), redlock.WithLogger(quiet()), redlock.WithRetry(redlock.ConstantBackoff(time.Minute)), redlock.WithQueueLease(time.Hour))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	l, err := c.TryLock(ctx, "k", 10*time.Second)
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
	require.NoError(t, l.Extend(ctx, 10*time.Second))
	require.NoError(t, l.Release(ctx))
	l = <-got
	require.NotNil(t, l)
	for _, s := range srv {
		_, err := s.Do("DEL", "k")
		require.NoError(t, err)
	}
	require.ErrorIs(t, l.Extend(ctx, 10*time.Second), redlock.ErrLockLost)
	require.NoError(t, srv[2].Kill())
	for i := range 3 {
		l, err := c.TryLock(ctx, fmt.Sprintf("k%d", i), 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
	}

	fromOTel, err := scrape(otelURL)
	require.NoError(t, err)
	fromRegistry, err := scrape("http://" + ln.Addr().String() + "/metrics")
	require.NoError(t, err)
	want, have := flatten(fromOTel), flatten(fromRegistry)
	assert.Equal(t, want, have)
	assert.Greater(t, len(want), 100, "buckets and all")
	for _, in := range lockmetrics.Catalogue() {
		name := in.PrometheusName()
		if f := fromOTel[name]; f != nil {
			assert.Equal(t, f.GetType(), fromRegistry[name].GetType(), name)
			assert.Equal(t, f.GetHelp(), fromRegistry[name].GetHelp(), name)
		}
	}
}
