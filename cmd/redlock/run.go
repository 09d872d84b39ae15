package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

var runCmd = command{
	name:     "run",
	synopsis: "[flags] -- COMMAND [ARG...]",
	about: `
Takes the lock on --key, runs COMMAND while the lock is extended every ttl/3,
and releases the lock when COMMAND exits. COMMAND gets REDLOCK_KEY and
REDLOCK_FENCE in its environment; pass the fence to the resource it writes, so
that the resource can refuse a holder that outlived its lock.

If the lock is lost (no extension reached a quorum within the validity, or the
keys were found gone), COMMAND gets SIGTERM and, if it is still running after
--grace, SIGKILL. Signals sent to redlock run (HUP, INT, QUIT, TERM, USR1,
USR2) are passed on to COMMAND. COMMAND runs in its own process group, so that
these reach whatever it started too; when stdin is a terminal it stays in the
terminal's group instead, to read input, and takes Ctrl-C and Ctrl-\ from the
terminal directly.

With --wait 0 (the default) there is one attempt; otherwise redlock waits up
to --wait for the holder to release, woken at once when it does.

With --permits K, COMMAND runs under one of K permits on --key instead of the
lock: at most K commands run at once. Every caller of a key must give the
same K. A permit needs more masters than a lock (4 of 5 for K = 2, all of
them for K >= N-1): see docs/guarantees.md, The semaphore.`,
	examples: `
  export REDLOCK_NODES=10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379

  # Once across the fleet: skip when another host holds the lock (exit 90).
  redlock run --key nightly-report -- ./report.sh

  # Wait up to ten minutes for the current holder to finish.
  redlock run --key migrate --wait 10m -- ./migrate up

  # At most two renders at once across the fleet (5 masters: each needs 4).
  redlock run --key render --permits 2 --wait 1h -- ./render.sh

  # A pipeline gets 30s to stop cleanly if the lock is lost.
  redlock run --key cache --ttl 30s --grace 30s -- sh -c 'rebuild | publish'`,
	extra: `Exit status:
  COMMAND's own  COMMAND ran with the lock held throughout (128+N if signal N killed it)
  90             the lock was not obtained: held elsewhere, or --wait ran out
  91             the lock was lost while COMMAND ran
  1              fewer than a quorum of masters can vote (down, or in the restart
                 guard's quarantine), or another failure
  2              bad flags or arguments
  126, 127       COMMAND could not be executed, or was not found
  128+N          redlock run got signal N while waiting for the lock`,
}

// runConfig is run's flags and command line.
type runConfig struct {
	clientFlags
	key   string
	wait  time.Duration
	grace time.Duration
	argv  []string
	// metricsAddr is where to serve the lock's metrics; "" for nowhere.
	metricsAddr string
	// permits is K for a permit of a semaphore on key, 0 for the lock;
	// everyMaster accepts a K whose quorum is every master.
	permits     int
	everyMaster bool
	sem         *redlock.Semaphore // with --permits
}

func runRun(ctx context.Context, a *app, args []string) error {
	var cfg runConfig
	fs := newFlagSet(runCmd.name)
	cfg.register(fs, 10*time.Second, "TTL of the lock; it is extended every ttl/3 while COMMAND runs")
	fs.StringVar(&cfg.key, "key", "", "the key to lock (default: COMMAND and its arguments, joined by spaces)")
	durationVar(fs, &cfg.wait, "wait", 0, "how long to wait for the lock; 0 makes one attempt")
	durationVar(fs, &cfg.grace, "grace", 5*time.Second, "after a lost lock, how long COMMAND has between SIGTERM and SIGKILL")
	fs.IntVar(&cfg.permits, "permits", 0, "run under one of this many permits on --key (a semaphore) instead of the lock; 0 takes the lock")
	fs.BoolVar(&cfg.everyMaster, "every-master", false, "with --permits, accept a count whose permits need every master: then no master may fail")
	fs.StringVar(&cfg.metricsAddr, "metrics-addr", "", "serve the lock's metrics for Prometheus at http://ADDR/metrics while redlock runs, e.g. :9464 (default: none)")
	if err := runCmd.parse(a, fs, args); err != nil {
		return err
	}
	cfg.argv = fs.Args()
	keySet := false
	fs.Visit(func(f *flag.Flag) { keySet = keySet || f.Name == "key" })
	switch {
	case keySet && cfg.key == "":
		// Not the command line in its place: two commands given --key ""
		// would then lock different keys.
		return usageErr("--key is empty: name the lock, or leave --key out to lock the command line")
	case len(cfg.argv) == 0:
		return usageErr("no command given: redlock run [flags] -- COMMAND [ARG...] (see redlock run -h)")
	case cfg.argv[0] == "":
		return usageErr("empty command name")
	case cfg.wait < 0:
		return usageErr("--wait %v is negative", cfg.wait)
	case cfg.grace < 0:
		return usageErr("--grace %v is negative", cfg.grace)
	case cfg.permits < 0:
		return usageErr("--permits %d is negative", cfg.permits)
	case cfg.everyMaster && cfg.permits == 0:
		return usageErr("--every-master applies only with --permits")
	}
	if cfg.key == "" {
		cfg.key = strings.Join(cfg.argv, " ")
	}
	addrs, err := cfg.requireAddrs(a.getenv)
	if err != nil {
		return err
	}
	observed, stopMetrics, err := serveMetrics(cfg.metricsAddr, runCmd.name, a.stderr)
	if err != nil {
		return err
	}
	defer stopMetrics()
	c, err := cfg.newClient(addrs, newLogger(a.stderr, cfg.verbose), observed...)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := cfg.semaphore(c.Client); err != nil {
		return err
	}

	// From here on these signals are ours to pass on, never fatal to us.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, caughtSignals()...)
	defer signal.Stop(sigs)

	l, err := cfg.acquire(ctx, c.Client, sigs)
	if err != nil {
		return err
	}
	return cfg.supervise(a, l, sigs)
}

// acquire takes the lock with auto-extension, within --wait. A signal while
// waiting ends redlock with 128+N, as if the signal had killed it.
func (cfg *runConfig) acquire(ctx context.Context, c *redlock.Client, sigs <-chan os.Signal) (*redlock.Lock, error) {
	lctx, cancel := context.WithCancel(ctx)
	if cfg.wait > 0 {
		lctx, cancel = context.WithTimeout(ctx, cfg.wait)
	}
	defer cancel()
	type result struct {
		l   *redlock.Lock
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.l, r.err = cfg.take(lctx, c)
		done <- r
	}()
	var r result
	select {
	case r = <-done:
	case s := <-sigs:
		cancel()
		r = <-done
		if r.l != nil {
			r.l.Release(context.WithoutCancel(ctx))
		}
		return nil, fail(exitSignalBase+signalNumber(s), "stopped by %s while waiting for the lock on %q; the command was not run", signalName(s), cfg.key)
	}
	switch err := r.err; {
	case err == nil:
		return r.l, nil
	case errors.Is(err, redlock.ErrInvalid):
		return nil, usageErr("%v", err)
	case !errors.Is(err, redlock.ErrNotObtained):
		return nil, fail(exitError, "lock %q: %v", cfg.key, err)
	}
	within := ""
	if cfg.wait > 0 {
		within = " within --wait " + cfg.wait.String()
	}
	if cfg.permits > 0 {
		// Inspect reads locks, not semaphores: the attempt's error says
		// what the masters answered.
		if errors.Is(r.err, redlock.ErrQuarantined) || !errors.Is(r.err, redlock.ErrHeld) {
			return nil, fail(exitError, "no permit of %q: %v", cfg.key, r.err)
		}
		return nil, fail(exitNotObtained, "no permit of %q obtained%s: %v", cfg.key, within, r.err)
	}
	// Not obtained: held elsewhere, or masters out of reach? Ask them.
	st, ierr := c.Inspect(ctx, cfg.key)
	if ierr != nil {
		return nil, fail(exitError, "lock %q: %v", cfg.key, r.err)
	}
	if err := quorumVotes(st); err != nil {
		return nil, err
	}
	if st.Held() || hasHolder(st) {
		return nil, fail(exitNotObtained, "lock %q not obtained%s: %s", cfg.key, within, verdict(st))
	}
	return nil, fail(exitNotObtained, "%v%s", r.err, within)
}

// take makes the attempt --wait asks for, with auto-extension: Lock or
// TryLock, or with --permits Acquire or TryAcquire of the semaphore.
func (cfg *runConfig) take(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) {
	if cfg.permits == 0 {
		if cfg.wait > 0 {
			return c.Lock(ctx, cfg.key, cfg.ttl, redlock.WithAutoExtend())
		}
		return c.TryLock(ctx, cfg.key, cfg.ttl, redlock.WithAutoExtend())
	}
	if cfg.wait > 0 {
		return cfg.sem.Acquire(ctx, cfg.ttl, redlock.WithAutoExtend())
	}
	return cfg.sem.TryAcquire(ctx, cfg.ttl, redlock.WithAutoExtend())
}

// semaphore makes the semaphore of --permits on c, when asked for: a count
// it refuses is a bad flag.
func (cfg *runConfig) semaphore(c *redlock.Client) error {
	if cfg.permits == 0 {
		return nil
	}
	var opts []redlock.SemaphoreOption
	if cfg.everyMaster {
		opts = append(opts, redlock.WithEveryMaster())
	}
	s, err := c.Semaphore(cfg.key, cfg.permits, opts...)
	if err != nil {
		// The library names its option; the command's is the flag.
		return usageErr("--permits: %s", strings.Replace(err.Error(), "WithEveryMaster", "--every-master", 1))
	}
	cfg.sem = s
	return nil
}

// hasHolder reports whether any master that answered holds the key.
func hasHolder(st *redlock.Status) bool {
	for _, n := range st.Nodes {
		if n.Err == nil && n.Holder != "" {
			return true
		}
	}
	return false
}

// supervise runs the command under l and returns how redlock should exit.
func (cfg *runConfig) supervise(a *app, l *redlock.Lock, sigs <-chan os.Signal) error {
	env := append(a.environ(), "REDLOCK_KEY="+cfg.key, "REDLOCK_FENCE="+strconv.FormatInt(l.Fence(), 10))
	ch, err := startChild(cfg.argv, env, a.stdin, a.stdout, a.stderr)
	if err != nil {
		release(l)
		return err
	}
	lockDone := l.Done()
	var killAfter <-chan time.Time
	lost := false
	var status int
wait:
	for {
		select {
		case status = <-ch.exited:
			break wait
		case s := <-sigs:
			ch.forward(s)
		case <-lockDone:
			lockDone = nil
			if l.Err() == nil {
				continue
			}
			lost = true
			fmt.Fprintf(a.stderr, "redlock run: lock %q (fence %d) lost: sending SIGTERM to the command, SIGKILL after %v\n", cfg.key, l.Fence(), cfg.grace)
			ch.terminate()
			t := time.NewTimer(cfg.grace)
			defer t.Stop()
			killAfter = t.C
		case <-killAfter:
			killAfter = nil
			fmt.Fprintf(a.stderr, "redlock run: the command outlived --grace %v: sending SIGKILL\n", cfg.grace)
			ch.kill()
		}
	}
	err = release(l)
	switch {
	case lost:
		return exitWith(exitLost)
	case errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrLockNotHeld):
		return fail(exitLost, "lock %q (fence %d) had expired when the command exited with status %d: the command may have run without it", cfg.key, l.Fence(), status)
	case err != nil:
		fmt.Fprintf(a.stderr, "redlock run: releasing lock %q: %s; it expires with its TTL\n", cfg.key, oneLine(err.Error()))
	}
	return exitWith(status)
}

// release gives the lock back, whatever the context of the run, bounded by
// the library's per-master timeouts.
func release(l *redlock.Lock) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return l.Release(ctx)
}
