package otel_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/otel"
	"github.com/quorumlock/quorumlock/redlock"
)

// servePrometheus serves an Observer's metrics at /metrics on loopback,
// through the OpenTelemetry Prometheus exporter, as Example_prometheus
// does; it returns the Observer and the URL.
func servePrometheus(t *testing.T) (*otel.Observer, string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	require.NoError(t, err)
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	t.Cleanup(func() { meters.Shutdown(context.Background()) })
	obs, err := otel.New(otel.WithMeterProvider(meters))
	require.NoError(t, err)
	t.Cleanup(func() { obs.Close() })
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return obs, "http://" + ln.Addr().String() + "/metrics"
}

// On real masters: a lock taken, a contended attempt, a release; the
// scrape, parsed, has the lock's series with their Prometheus names, types
// and labels, and a state and quarantine series per master.
func TestPrometheus_ScrapeHasTheLocksSeries(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.Ephemeral)
	addrs := redistest.Addrs(srv)
	obs, url := servePrometheus(t)
	c, err := redlock.NewFromAddrs(addrs, redlock.WithObserver(obs), redlock.WithRestartGuard(0), redlock.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	_, err = c.TryLock(ctx, "k", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	held, err := scrape(url)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))

	fams, err := scrape(url)
	require.NoError(t, err)
	assert.Equal(t, []string{
		`quorumlock_lock_acquire_duration_seconds_count{quorumlock_outcome="held"} 1`,
		`quorumlock_lock_acquire_duration_seconds_count{quorumlock_outcome="obtained"} 1`,
		`quorumlock_lock_attempts_total{quorumlock_outcome="held"} 1`,
		`quorumlock_lock_attempts_total{quorumlock_outcome="obtained"} 1`,
		`quorumlock_lock_held_duration_seconds_count{} 1`,
		`quorumlock_lock_held{} 0`,
		`quorumlock_lock_releases_total{quorumlock_outcome="released"} 1`,
		`quorumlock_lock_wait_duration_seconds_count{quorumlock_operation="trylock",quorumlock_outcome="held"} 1`,
		`quorumlock_lock_wait_duration_seconds_count{quorumlock_operation="trylock",quorumlock_outcome="obtained"} 1`,
	}, series(fams, "quorumlock_lock_"))
	assert.Contains(t, series(held, "quorumlock_lock_held"), `quorumlock_lock_held{} 1`, "while the lock was held")

	types := map[string]dto.MetricType{
		"quorumlock_lock_attempts_total":           dto.MetricType_COUNTER,
		"quorumlock_lock_acquire_duration_seconds": dto.MetricType_HISTOGRAM,
		"quorumlock_lock_wait_duration_seconds":    dto.MetricType_HISTOGRAM,
		"quorumlock_lock_held":                     dto.MetricType_GAUGE,
		"quorumlock_master_state":                  dto.MetricType_GAUGE,
		"quorumlock_master_quarantined":            dto.MetricType_GAUGE,
		"quorumlock_master_changes_total":          dto.MetricType_COUNTER,
	}
	for name, typ := range types {
		require.Contains(t, fams, name)
		assert.Equal(t, typ, fams[name].GetType(), name)
	}
	var want []string
	for _, a := range addrs {
		want = append(want, `quorumlock_master_quarantined{quorumlock_master_address="`+a+`"} 0`)
		for _, s := range []string{"down", "failing", "silent", "up"} {
			v := "0"
			if s == "up" {
				v = "1"
			}
			want = append(want, `quorumlock_master_state{quorumlock_master_address="`+a+`",quorumlock_master_state="`+s+`"} `+v)
		}
	}
	got := append(series(fams, "quorumlock_master_quarantined"), series(fams, "quorumlock_master_state")...)
	assert.ElementsMatch(t, want, got)
}

// docs/observability.md lists every instrument, with the Prometheus name a
// scrape shows.
func TestPrometheus_DocsListEveryInstrument(t *testing.T) {
	doc, err := os.ReadFile("../docs/observability.md")
	require.NoError(t, err)
	for _, name := range []string{otel.MetricAttempts, otel.MetricAcquireDuration, otel.MetricWaitDuration,
		otel.MetricExtensions, otel.MetricReleases, otel.MetricHeldDuration, otel.MetricHeld, otel.MetricLosses,
		otel.MetricHandovers, otel.MetricWakeups, otel.MetricFenceRaises, otel.MetricMasterChanges,
		otel.MetricMasterState, otel.MetricMasterQuarantined} {
		assert.Contains(t, string(doc), "| `"+name+"` |", "the table lists %s", name)
	}
	for _, name := range []string{otel.SpanLock, otel.SpanTryLock, otel.SpanLockAll, otel.SpanTryLockAll, otel.SpanExtend, otel.SpanRelease, otel.SpanDo} {
		assert.Contains(t, string(doc), "`"+name+"`")
	}

	srv := redistest.Start(t, 3, redistest.Ephemeral)
	obs, url := servePrometheus(t)
	c, err := redlock.NewFromAddrs(redistest.Addrs(srv), redlock.WithObserver(obs), redlock.WithRestartGuard(0), redlock.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", 10*time.Second, redlock.WithAutoExtend())
	require.NoError(t, err)
	require.NoError(t, l.Extend(ctx, 10*time.Second))
	require.NoError(t, l.Release(ctx))
	fams, err := scrape(url)
	require.NoError(t, err)
	n := 0
	for name := range fams {
		if strings.HasPrefix(name, "quorumlock_") {
			n++
			assert.Contains(t, string(doc), "| `"+name+"` |", "the table gives the Prometheus name %s", name)
		}
	}
	assert.GreaterOrEqual(t, n, 10)
}
