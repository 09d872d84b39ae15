package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/quorumlock/quorumlock/internal/lockmetrics"
	"github.com/quorumlock/quorumlock/redlock"
)

// serveMetrics serves the client's metrics for Prometheus at
// http://addr/metrics, with the names the OpenTelemetry Prometheus exporter
// gives them (see docs/observability.md), and says where on stderr. It
// returns the client's option that feeds them, and stop, which ends the
// server. With addr empty it serves nothing.
func serveMetrics(addr, cmd string, stderr io.Writer) ([]redlock.Option, func(), error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fail(exitError, "--metrics-addr %s: %v", addr, err)
	}
	reg := lockmetrics.NewRegistry()
	mux := http.NewServeMux()
	mux.Handle("/metrics", reg)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	fmt.Fprintf(stderr, "redlock %s: metrics at http://%s/metrics\n", cmd, ln.Addr())
	return []redlock.Option{redlock.WithObserver(reg)}, func() { srv.Close(); <-done }, nil
}

// gate passes events on to a Registry once opened: bench's check of the
// quorum does not count among its outcomes.
type gate struct {
	open atomic.Bool
	to   *lockmetrics.Registry
}

func (g *gate) Start(ctx context.Context, _ redlock.Op, _ string) context.Context { return ctx }

func (g *gate) Observe(ctx context.Context, ev redlock.Event) {
	if g.open.Load() {
		g.to.Observe(ctx, ev)
	}
}

// printOutcomes prints how the attempts and releases ended, counted from
// the client's events.
func printOutcomes(w io.Writer, reg *lockmetrics.Registry) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w)
	fmt.Fprintln(tw, "outcome\tattempts\treleases\t")
	attempts, releases := reg.Outcomes(lockmetrics.Attempts), reg.Outcomes(lockmetrics.Releases)
	var names []string
	for o := range attempts {
		names = append(names, o)
	}
	for o := range releases {
		if _, ok := attempts[o]; !ok {
			names = append(names, o)
		}
	}
	slices.Sort(names)
	for _, o := range names {
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", o, count(attempts, o), count(releases, o))
	}
	tw.Flush()
}

func count(m map[string]float64, k string) string {
	if v, ok := m[k]; ok {
		return fmt.Sprintf("%.0f", v)
	}
	return ""
}
