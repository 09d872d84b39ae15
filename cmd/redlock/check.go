package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

var checkCmd = command{
	name:     "check",
	synopsis: "[flags]",
	about: `
Checks that the masters are ready for locking, and says what to fix. For
each master: whether it answers, its version (6.0 or later), its role (a
replica or a cluster node given as a plain master cannot vote), whether the
restart guard can read its INFO and CONFIG, its persistence and what a
restart costs, its eviction policy, whether the user in the address may run
every command, key and channel the lock uses (the check runs the lock's own
scripts on a throwaway key and deletes it), its uptime against the guard
window, and its clock against this machine's.

One line per finding: ok, warn (locking works, with a limit) or fail (the
master cannot vote), with the fix. Then a summary.

The exit status is 0 when a quorum of masters passes every check that keeps
a master from voting, so that locking works; 1 otherwise; 2 for bad flags.
docs/check.md explains each finding.`,
	examples: `
  # Are the three masters ready for locks of up to 30s?
  redlock check --nodes 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379 --ttl 30s

  # As the application's ACL user, in its namespace.
  redlock check --nodes redis://app:secret@10.0.0.1:6379,... --namespace app:lock:`,
}

// checkConfig is check's flags.
type checkConfig struct {
	clientFlags
	namespace       string
	keyPrefix       string
	trustEviction   bool
	trustUnreadable bool
	timeout         time.Duration
}

func runCheck(ctx context.Context, a *app, args []string) error {
	var cfg checkConfig
	fs := newFlagSet(checkCmd.name)
	cfg.register(fs, 10*time.Second, "the longest TTL the lock's users take: sets the guard window and the drift reserve the masters are judged against")
	fs.StringVar(&cfg.namespace, "namespace", "", "the lock's namespace (WithNamespace), inside which the check's key and channel lie")
	fs.StringVar(&cfg.keyPrefix, "key-prefix", redlock.DefaultCheckKeyPrefix, "start of the throwaway key the check locks, inside the namespace; a random suffix follows")
	fs.BoolVar(&cfg.trustEviction, "trust-eviction", false, "judge as a client with WithTrustEviction: a master that may evict keys votes")
	fs.BoolVar(&cfg.trustUnreadable, "trust-unreadable", false, "judge as a client with WithTrustUnreadable: a master whose INFO is denied votes")
	durationVar(fs, &cfg.timeout, "timeout", 30*time.Second, "bound on the whole check")
	if err := checkCmd.parse(a, fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageErr("check takes no arguments, got %q (see redlock check -h)", fs.Arg(0))
	case cfg.timeout <= 0:
		return usageErr("--timeout %v is not positive", cfg.timeout)
	}
	addrs, err := cfg.requireAddrs(a.getenv)
	if err != nil {
		return err
	}
	extra := []redlock.Option{redlock.WithNamespace(cfg.namespace)}
	if cfg.trustEviction {
		extra = append(extra, redlock.WithTrustEviction())
	}
	if cfg.trustUnreadable {
		extra = append(extra, redlock.WithTrustUnreadable())
	}
	c, err := cfg.newClient(addrs, newLogger(a.stderr, cfg.verbose), extra...)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	r, err := c.Check(ctx, redlock.CheckParams{TTL: cfg.ttl, KeyPrefix: cfg.keyPrefix})
	if errors.Is(err, redlock.ErrInvalid) {
		return usageErr("%v", err)
	}
	if err != nil {
		return err
	}
	printReadiness(a.stdout, r)
	if !r.Ready() {
		return fail(exitError, "%s", r.Summary())
	}
	return nil
}

// printReadiness writes the findings, a master at a time, and the summary.
func printReadiness(w io.Writer, r *redlock.Readiness) {
	guard := "the restart guard is off"
	if r.Window > 0 {
		guard = fmt.Sprintf("guard window %v", r.Window)
	}
	fmt.Fprintf(w, "%d masters, quorum %d; judged for a TTL of %v: %s, drift reserve %v\n",
		len(r.Masters), r.Quorum, r.TTL, guard, r.Reserve)
	for _, m := range r.Masters {
		fmt.Fprintf(w, "\nnode %d %s\n", m.Node, m.Addr)
		for _, f := range m.Findings {
			line := fmt.Sprintf("%-4s  %-11s %s", f.Level, f.Topic, f.Text)
			if f.Fix != "" && f.Level != redlock.CheckOK {
				line += "; fix: " + f.Fix
			}
			fmt.Fprintln(w, "  "+oneLine(line))
		}
	}
	fmt.Fprintf(w, "\n%s\n", r.Summary())
}
