package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/quorumlock/quorumlock"
	"github.com/quorumlock/quorumlock/redlock"
)

var statusCmd = command{
	name:     "status",
	synopsis: "[flags] KEY...",
	about: `
Asks every master about each KEY, changing nothing, and prints per master:
whether it answered, the holder's token (shortened), the key's remaining TTL,
the key's fencing counter, and whether the restart guard keeps the master out
of the quorum. Then the verdict: held by a quorum of masters, or not.

The restart guard's window is the longest TTL this client used, so status
takes the TTL the lock holders use from --ttl; --restart-guard overrides it.

The exit status is 0 when, for every key, a quorum of masters answered and
may vote; 1 otherwise (with one line on stderr); 2 for bad flags.`,
	examples: `
  # Who holds nightly-report, and on which masters?
  redlock status --nodes 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379 nightly-report

  # Several keys; holders that lock with a 1m TTL.
  REDLOCK_NODES=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 redlock status --ttl 1m jobs:a jobs:b`,
}

func runStatus(ctx context.Context, a *app, args []string) error {
	var cf clientFlags
	fs := newFlagSet(statusCmd.name)
	cf.register(fs, 10*time.Second, "TTL the lock holders use; sets the restart guard's window when --restart-guard is auto")
	if err := statusCmd.parse(a, fs, args); err != nil {
		return err
	}
	keys := fs.Args()
	if len(keys) == 0 {
		return usageErr("no key given: redlock status [flags] KEY... (see redlock status -h)")
	}
	for _, k := range keys {
		if k == "" {
			return usageErr("empty key")
		}
	}
	addrs, err := cf.requireAddrs(a.getenv)
	if err != nil {
		return err
	}
	var extra []redlock.Option
	if cf.restartGuard.auto && cf.ttl > 0 {
		// What a holder's client would use: its TTL plus the drift reserve.
		drift := quorumlock.Drift{Factor: cf.driftFactor, Margin: cf.driftMargin}
		extra = append(extra, redlock.WithRestartGuard(cf.ttl+drift.Reserve(cf.ttl)))
	}
	c, err := cf.newClient(addrs, newLogger(a.stderr, cf.verbose), extra...)
	if err != nil {
		return err
	}
	defer c.Close()

	var firstErr error
	for i, k := range keys {
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		st, err := c.Inspect(ctx, k)
		if err != nil {
			return fail(exitError, "key %q: %v", k, err)
		}
		printStatus(a.stdout, st)
		if err := quorumVotes(st); err != nil && firstErr == nil {
			firstErr = fail(exitError, "key %q: %v", k, err)
		}
	}
	return firstErr
}

// printStatus writes the per-master table and the verdict for one key, and
// below the table why each silent master did not answer.
func printStatus(w io.Writer, st *redlock.Status) {
	fmt.Fprintf(w, "key %q: %s\n", st.Key, verdict(st))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  node\taddress\tanswered\tholder\tpttl\tfence\tquarantined")
	var why []string
	for _, n := range st.Nodes {
		if n.Err != nil {
			fmt.Fprintf(tw, "  %d\t%s\tno\t\t\t\t%s\n", n.Node, n.Addr, quarantine(n))
			why = append(why, fmt.Sprintf("  node %d (%s): %s", n.Node, n.Addr, oneLine(n.Err.Error())))
			continue
		}
		fmt.Fprintf(tw, "  %d\t%s\tyes\t%s\t%s\t%d\t%s\n", n.Node, n.Addr, shortHolder(n.Holder), pttl(n.TTL), n.Fence, quarantine(n))
	}
	tw.Flush()
	for _, l := range why {
		fmt.Fprintln(w, l)
	}
}

// verdict says whether a quorum agrees on a holder, and how many masters do.
func verdict(st *redlock.Status) string {
	v := countVotes(st)
	count := map[string]int{}
	for _, n := range st.Nodes {
		if n.Err == nil && !n.Quarantined && n.Holder != "" {
			count[n.Holder]++
		}
	}
	if st.Held() {
		return fmt.Sprintf("HELD by a quorum: %d of %d masters agree on holder %s (quorum %d)",
			count[st.Holder], len(st.Nodes), shortHolder(st.Holder), st.Quorum)
	}
	if v.voting < st.Quorum {
		return fmt.Sprintf("UNKNOWN: only %d of %d masters can vote (quorum %d; %d did not answer, %d in restart quarantine)",
			v.voting, len(st.Nodes), st.Quorum, len(v.down), len(v.quarantined))
	}
	best, most := "", 0
	for h, c := range count {
		if c > most || (c == most && h < best) {
			best, most = h, c
		}
	}
	if most == 0 {
		return fmt.Sprintf("FREE: no voting master holds it (quorum %d)", st.Quorum)
	}
	return fmt.Sprintf("NOT HELD by a quorum: at most %d of %d masters agree, on holder %s (quorum %d)",
		most, len(st.Nodes), shortHolder(best), st.Quorum)
}

// shortHolder shortens a token to its first 8 digits; an owner's name
// ("owner:x") or a foreign key's type ("?hash") is kept, up to 24 characters.
func shortHolder(h string) string {
	switch {
	case h == "":
		return "-"
	case strings.HasPrefix(h, "owner:") || strings.HasPrefix(h, "?"):
		if r := []rune(h); len(r) > 24 {
			return string(r[:23]) + "…"
		}
		return h
	case len(h) > 12:
		return h[:8] + "…"
	}
	return h
}

// pttl renders Redis's PTTL: -2ms for no key, -1ms for no expiry.
func pttl(d time.Duration) string {
	switch d {
	case -2 * time.Millisecond:
		return "-"
	case -1 * time.Millisecond:
		return "no expiry"
	}
	return d.String()
}

func quarantine(n redlock.NodeStatus) string {
	if !n.Quarantined {
		return "no"
	}
	// Only a master whose uptime is known can be in quarantine.
	return fmt.Sprintf("yes (up %v)", n.Uptime)
}
