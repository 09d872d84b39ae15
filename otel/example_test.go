package otel_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/quorumlock/quorumlock/otel"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/redlocktest"
)

// The client's metrics served to Prometheus at /metrics, through the
// OpenTelemetry Prometheus exporter. The masters here are in-process, so
// that the example runs anywhere; give a client real ones.
func Example_prometheus() {
	masters, err := redlocktest.Start(3) // in-process masters, for the example
	if err != nil {
		log.Fatal(err)
	}
	defer masters.Close()
	ctx := context.Background()

	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		log.Fatal(err)
	}
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer meters.Shutdown(ctx)
	obs, err := otel.New(otel.WithMeterProvider(meters))
	if err != nil {
		log.Fatal(err)
	}
	defer obs.Close()
	c, err := redlock.NewFromAddrs(masters.Addrs(), redlock.WithObserver(obs),
		redlock.WithTrustUnreadable(), redlock.WithNodeTimeout(time.Second),
		redlock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", "127.0.0.1:0") // in production, ":9464" say
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()

	l, err := c.TryLock(ctx, "report", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		log.Fatal(err)
	}

	fams, err := scrape("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range series(fams, "quorumlock_lock_") {
		fmt.Println(s)
	}
	// Output:
	// quorumlock_lock_acquire_duration_seconds_count{quorumlock_outcome="obtained"} 1
	// quorumlock_lock_attempts_total{quorumlock_outcome="obtained"} 1
	// quorumlock_lock_held_duration_seconds_count{} 1
	// quorumlock_lock_held{} 0
	// quorumlock_lock_releases_total{quorumlock_outcome="released"} 1
	// quorumlock_lock_wait_duration_seconds_count{quorumlock_operation="trylock",quorumlock_outcome="obtained"} 1
}

// scrape gets url's text exposition and parses it.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// series renders the families whose names begin with prefix, one line per
// series, sorted: a counter's or gauge's value, a histogram's count. The
// labels every series carries (the scope's) are left out.
func series(fams map[string]*dto.MetricFamily, prefix string) []string {
	var out []string
	for name, f := range fams {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				if strings.HasPrefix(lp.GetName(), "otel_scope_") {
					continue
				}
				labels = append(labels, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			sort.Strings(labels)
			l := "{" + strings.Join(labels, ",") + "}"
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, fmt.Sprintf("%s%s %v", name, l, m.GetCounter().GetValue()))
			case dto.MetricType_GAUGE:
				out = append(out, fmt.Sprintf("%s%s %v", name, l, m.GetGauge().GetValue()))
			case dto.MetricType_HISTOGRAM:
				out = append(out, fmt.Sprintf("%s_count%s %v", name, l, m.GetHistogram().GetSampleCount()))
			}
		}
	}
	sort.Strings(out)
	return out
}
