package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/quorumlock/quorumlock"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/redlocktest"
)

var demoCmd = command{
	name:     "demo",
	synopsis: "[flags]",
	about: `
Workers, each with its own client as separate processes would have, contend
for one key. Every hand-off prints a line: the worker, its fence, the validity
left, and the masters that hold its token.

Without --nodes or $REDLOCK_NODES, the demo starts in-process masters on
loopback (miniredis; keys expire in real time) and, midway, kills them one by
one until fewer than a quorum are up, then brings them back: the lock keeps
working with a majority, stops without one, and resumes. These masters keep
their data across the restart, as Redis with appendfsync always does, and
cannot report their uptime, so the restart guard is off for them unless
--restart-guard says otherwise. With real masters nothing is killed; stop one
yourself to watch the same.

The summary counts acquisitions, the most holders at once (counted in this
process; it must be 1) and whether fences rose strictly. The exit status is 0
only if all three held.`,
	examples: `
  # Five in-process masters, three workers, ten seconds.
  redlock demo

  # Longer, with more contention.
  redlock demo --duration 30s --workers 5

  # Real masters; stop one yourself while it runs.
  redlock demo --nodes 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003`,
}

// demoConfig is the demo's flags.
type demoConfig struct {
	clientFlags
	duration time.Duration
	workers  int
	key      string
	hold     time.Duration
	masters  int
}

func runDemo(ctx context.Context, a *app, args []string) error {
	var cfg demoConfig
	fs := newFlagSet(demoCmd.name)
	cfg.register(fs, time.Second, "TTL of each lock")
	durationVar(fs, &cfg.duration, "duration", 10*time.Second, "how long the demo runs")
	fs.IntVar(&cfg.workers, "workers", 3, "workers contending for the key")
	fs.StringVar(&cfg.key, "key", "demo", "the key they contend for")
	durationVar(fs, &cfg.hold, "hold", 150*time.Millisecond, "how long each holder keeps the lock before releasing it; at most ttl/2")
	fs.IntVar(&cfg.masters, "masters", 5, "in-process masters to start when no --nodes are given")
	if err := demoCmd.parse(a, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q (see redlock demo -h)", fs.Arg(0))
	}
	addrs, err := cfg.addrs(a.getenv)
	if err != nil {
		return err
	}
	if err := cfg.validate(fs, len(addrs) > 0); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := &demo{cfg: cfg, out: &timeline{w: a.stdout}, log: newLogger(a.stderr, cfg.verbose)}
	var extra []redlock.Option
	if len(addrs) == 0 {
		e, err := redlocktest.Start(cfg.masters)
		if err != nil {
			return fail(exitError, "%v", err)
		}
		defer e.Close()
		d.masters, addrs = e, e.Addrs()
		// The in-process masters keep their data when the demo restarts
		// them, like Redis with appendfsync always, so no quarantine is due.
		// Nor could the guard work: miniredis's INFO has no uptime or role,
		// so they vote only if trusted unread.
		if cfg.restartGuard.auto {
			extra = append(extra, redlock.WithRestartGuard(0))
		}
		extra = append(extra, embeddedOptions(d.log)...)
	}
	return d.run(ctx, addrs, extra)
}

func (cfg *demoConfig) validate(fs *flag.FlagSet, realNodes bool) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case cfg.duration <= 0:
		return usageErr("--duration %v is not positive", cfg.duration)
	case cfg.workers < 1 || cfg.workers > 64:
		return usageErr("--workers %d is outside 1-64", cfg.workers)
	case cfg.key == "":
		return usageErr("--key is empty")
	case cfg.ttl <= 0:
		return usageErr("--ttl %v is not positive", cfg.ttl)
	case cfg.hold <= 0 || cfg.hold > cfg.ttl/2:
		return usageErr("--hold %v must be positive and at most half of --ttl %v, so a holder is done well within its validity", cfg.hold, cfg.ttl)
	case cfg.masters < 1 || cfg.masters > 15:
		return usageErr("--masters %d is outside 1-15", cfg.masters)
	case realNodes && set["masters"]:
		return usageErr("--masters sets how many in-process masters to start; it cannot be used with --nodes or $%s", nodesEnv)
	}
	return nil
}

// demo is one run of the demo.
type demo struct {
	cfg     demoConfig
	out     *timeline
	log     *slog.Logger
	masters *redlocktest.Servers // nil with real masters
	tally   tally
}

func (d *demo) run(ctx context.Context, addrs []string, extra []redlock.Option) error {
	clients := make([]*client, 0, d.cfg.workers)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for range d.cfg.workers {
		c, err := d.cfg.newClient(addrs, d.log, extra...)
		if err != nil {
			return err
		}
		clients = append(clients, c)
	}
	if d.masters == nil {
		if err := checkQuorum(ctx, clients[0].Client, d.cfg.key); err != nil {
			return err
		}
	}
	d.header(addrs, clients[0].Quorum())

	ctx, cancel := context.WithTimeout(ctx, d.cfg.duration)
	defer cancel()
	d.out.start()
	d.tally.init(len(addrs))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { d.worker(ctx, i+1, c.Client) })
	}
	if d.masters != nil {
		wg.Go(func() { d.faults(ctx, clients[0].Quorum()) })
	}
	wg.Wait()
	return d.summary()
}

func (d *demo) header(addrs []string, q int) {
	w := d.out.w
	if d.masters != nil {
		fmt.Fprintf(w, "No --nodes or $%s given: started %d in-process Redis-protocol masters on loopback (miniredis).\n", nodesEnv, len(addrs))
	} else {
		fmt.Fprintf(w, "Using %d masters from --nodes / $%s. The demo does not stop real masters; stop one yourself to watch the quorum at work.\n", len(addrs), nodesEnv)
	}
	for i, a := range addrs {
		fmt.Fprintf(w, "  master %d  %s\n", i, a)
	}
	fmt.Fprintf(w, "%d workers, each with its own client, contend for key %q for %v: quorum %d of %d, ttl %v, each holder keeps the lock %v.\n",
		d.cfg.workers, d.cfg.key, d.cfg.duration, q, len(addrs), d.cfg.ttl, d.cfg.hold)
	fmt.Fprintf(w, "Each hand-off shows the masters holding the new holder's token: a digit per master that holds it, . for one that answered without it, x for one that did not answer (down, or slower than --node-timeout).\n")
	fmt.Fprintf(w, "Fences skip numbers: each master counts every grant, also those of attempts that missed the quorum and were rolled back.\n\n")
}

// timeline prints lines stamped with the time since the demo started.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	began time.Time
}

func (t *timeline) start() { t.began = time.Now() }

func (t *timeline) printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%6.2fs  %s\n", time.Since(t.began).Seconds(), fmt.Sprintf(format, args...))
}

// quorumMarks renders which masters hold token: "[01x3.]".
func quorumMarks(st *redlock.Status, token string) string {
	var b strings.Builder
	b.WriteByte('[')
	for _, n := range st.Nodes {
		switch {
		case n.Err != nil:
			b.WriteByte('x')
		case n.Holder == token:
			b.WriteString(nodeDigit(n.Node))
		default:
			b.WriteByte('.')
		}
	}
	b.WriteByte(']')
	return b.String()
}

func nodeDigit(i int) string {
	const digits = "0123456789abcdef"
	if i < len(digits) {
		return digits[i : i+1]
	}
	return "#"
}

// killsToLoseQuorum is how many of n masters must be down before no quorum
// of q can form.
func killsToLoseQuorum(n, q int) int {
	if q == 0 {
		q = quorumlock.Quorum(n)
	}
	return min(n-q+1, n)
}
