package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/quorumlock/quorumlock/internal/histogram"
	"github.com/quorumlock/quorumlock/internal/lockmetrics"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/redlocktest"
)

var benchCmd = command{
	name:     "bench",
	synopsis: "[flags]",
	about: `
Measures acquire+release: --concurrency goroutines share one client, each
taking and releasing a key of its own (TryLock, then Release) as fast as it
can for --duration. It shows a progress bar on a terminal and a plain line per
second otherwise, then a table of throughput and p50/p99/max latency.

Without --nodes or $REDLOCK_NODES it starts five in-process masters, which
share the CPU with the benchmark and run each script in a fresh Lua
interpreter, far slower than Redis: use real masters for real numbers.
Against freshly started masters pass --restart-guard 0, or they sit out the
restart guard's window first. Ctrl-C ends the run early and prints the table.`,
	examples: `
  # In-process masters, four goroutines, ten seconds.
  redlock bench

  # Real masters, more load.
  redlock bench --concurrency 16 --duration 30s --nodes 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379

  # Freshly started masters; the table to a file, progress lines on stderr.
  redlock bench --restart-guard 0 --nodes 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 > results.txt`,
}

// benchConfig is bench's flags.
type benchConfig struct {
	clientFlags
	concurrency int
	duration    time.Duration
	prefix      string
	outcomes    bool
}

func runBench(ctx context.Context, a *app, args []string) error {
	var cfg benchConfig
	fs := newFlagSet(benchCmd.name)
	cfg.register(fs, 10*time.Second, "TTL of each lock")
	fs.IntVar(&cfg.concurrency, "concurrency", 4, "goroutines locking at once, each on its own key")
	durationVar(fs, &cfg.duration, "duration", 10*time.Second, "how long to run")
	fs.BoolVar(&cfg.outcomes, "outcomes", false, "also print how attempts and releases ended, counted from the client's events")
	fs.StringVar(&cfg.prefix, "key", "bench", "key prefix; goroutine i locks <prefix>:<run id>:<i>, and <prefix>:<run id>:<i>.<n> after its n-th failure")
	if err := benchCmd.parse(a, fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageErr("unexpected argument %q (see redlock bench -h)", fs.Arg(0))
	case cfg.concurrency < 1 || cfg.concurrency > 4096:
		return usageErr("--concurrency %d is outside 1-4096", cfg.concurrency)
	case cfg.duration <= 0:
		return usageErr("--duration %v is not positive", cfg.duration)
	case cfg.prefix == "":
		return usageErr("--key is empty")
	}
	addrs, err := cfg.addrs(a.getenv)
	if err != nil {
		return err
	}
	log := newLogger(a.stderr, cfg.verbose)
	where := fmt.Sprintf("%d masters", len(addrs))
	var extra []redlock.Option
	if len(addrs) == 0 {
		e, err := redlocktest.Start(5)
		if err != nil {
			return fail(exitError, "%v", err)
		}
		defer e.Close()
		addrs, where = e.Addrs(), "5 in-process masters (miniredis)"
		if cfg.restartGuard.auto {
			// See runDemo: these masters cannot report their uptime.
			extra = append(extra, redlock.WithRestartGuard(0))
		}
		extra = append(extra, embeddedOptions(log)...)
	}
	events := &gate{to: lockmetrics.NewRegistry()}
	if cfg.outcomes {
		extra = append(extra, redlock.WithObserver(events))
	}
	c, err := cfg.newClient(addrs, log, extra...)
	if err != nil {
		return err
	}
	defer c.Close()
	runID, err := randomID()
	if err != nil {
		return fail(exitError, "%v", err)
	}
	prefix := cfg.prefix + ":" + runID
	if err := checkQuorum(ctx, c.Client, prefix+":0"); err != nil {
		return err
	}

	events.open.Store(true)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(a.stdout, "redlock bench: %s, quorum %d, %d goroutines, ttl %v, %v\n",
		where, c.Quorum(), cfg.concurrency, cfg.ttl, cfg.duration)
	r := benchRun(ctx, c.Client, cfg, prefix, newProgress(a.stderr, cfg.duration))
	r.print(a.stdout)
	if cfg.outcomes {
		printOutcomes(a.stdout, events.to)
	}
	if r.total.Count() == 0 {
		return fail(exitError, "no acquisition succeeded: %v", r.firstErr)
	}
	return nil
}

// benchResult is what the goroutines measured, merged.
type benchResult struct {
	latencies
	acquireFailed, releaseFailed uint64
	firstErr                     error
	elapsed                      time.Duration
}

// latencies are the three histograms of a run.
type latencies struct {
	total, acquire, release histogram.Histogram
}

// shard is a set of histograms some goroutines share. A histogram is tens
// of kilobytes; with thousands of goroutines, one set each would take
// gigabytes, and a mutex costs nothing at the rate locks are taken.
type shard struct {
	mu sync.Mutex
	latencies
}

// maxShards bounds the histogram sets a run keeps.
const maxShards = 16

func (s *shard) record(acquire, release time.Duration, released bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acquire.Record(acquire)
	if released {
		s.release.Record(release)
		s.total.Record(acquire + release)
	}
}

// benchWorker is one goroutine's counts; its latencies go to its shard.
type benchWorker struct {
	shard         *shard
	acquireFailed uint64
	releaseFailed uint64
	firstErr      error
}

func benchRun(ctx context.Context, c *redlock.Client, cfg benchConfig, prefix string, p *progress) *benchResult {
	ctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	var ops atomic.Uint64
	shards := make([]shard, min(cfg.concurrency, maxShards))
	workers := make([]benchWorker, cfg.concurrency)
	for i := range workers {
		workers[i].shard = &shards[i%len(shards)]
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() { workers[i].loop(ctx, c, fmt.Sprintf("%s:%d", prefix, i), cfg.ttl, &ops) })
	}
	reportDone := make(chan struct{})
	go func() {
		defer close(reportDone)
		t := time.NewTicker(p.interval())
		defer t.Stop()
		last, lastAt := uint64(0), start
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				n := ops.Load()
				p.update(now.Sub(start), n, float64(n-last)/now.Sub(lastAt).Seconds())
				last, lastAt = n, now
			}
		}
	}()
	wg.Wait()
	r := &benchResult{elapsed: time.Since(start)}
	cancel()
	<-reportDone
	p.finish()
	for i := range shards {
		r.total.Merge(&shards[i].total)
		r.acquire.Merge(&shards[i].acquire)
		r.release.Merge(&shards[i].release)
	}
	for _, w := range workers {
		r.acquireFailed += w.acquireFailed
		r.releaseFailed += w.releaseFailed
		if r.firstErr == nil {
			r.firstErr = w.firstErr
		}
	}
	return r
}

// loop takes and releases a key of its own until ctx ends. After a failure
// it moves on to a fresh key: what a failed attempt left behind (a rollback
// or release that timed out) stays until its TTL runs out, and retrying that
// key would measure refusals, not locking.
func (w *benchWorker) loop(ctx context.Context, c *redlock.Client, prefix string, ttl time.Duration, ops *atomic.Uint64) {
	generation := 0
	key := prefix
	failed := func(err error) {
		if w.firstErr == nil {
			w.firstErr = err
		}
		generation++
		key = fmt.Sprintf("%s.%d", prefix, generation)
		// Failures are fast when masters are down; do not spin on them.
		pause(ctx, time.Millisecond)
	}
	for ctx.Err() == nil {
		t0 := time.Now()
		l, err := c.TryLock(ctx, key, ttl)
		t1 := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.acquireFailed++
			failed(err)
			continue
		}
		// The release must happen even if ctx ended meanwhile.
		err = l.Release(context.WithoutCancel(ctx))
		t2 := time.Now()
		w.shard.record(t1.Sub(t0), t2.Sub(t1), err == nil)
		if err != nil {
			w.releaseFailed++
			failed(err)
			continue
		}
		ops.Add(1)
	}
}

func (r *benchResult) print(w io.Writer) {
	secs := r.elapsed.Seconds()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tcount\tper second\tmean\tp50\tp99\tmax\t")
	row := func(name string, h *histogram.Histogram, rate bool) {
		perSec := ""
		if rate {
			perSec = fmt.Sprintf("%.0f", float64(h.Count())/secs)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", name, h.Count(), perSec,
			latency(h.Mean()), latency(h.Quantile(0.50)), latency(h.Quantile(0.99)), latency(h.Max()))
	}
	fmt.Fprintln(w)
	row("acquire+release", &r.total, true)
	row("acquire", &r.acquire, false)
	row("release", &r.release, false)
	fmt.Fprintf(tw, "failed acquire\t%d\t\t\t\t\t\t\n", r.acquireFailed)
	fmt.Fprintf(tw, "failed release\t%d\t\t\t\t\t\t\n", r.releaseFailed)
	tw.Flush()
	fmt.Fprintf(w, "\n%v measured", r.elapsed.Round(time.Millisecond))
	if r.firstErr != nil {
		fmt.Fprintf(w, "; first failure: %s", oneLine(r.firstErr.Error()))
	}
	fmt.Fprintln(w)
}

// latency renders a duration with three significant digits.
func latency(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// randomID names one bench run, so that runs never share keys.
func randomID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
