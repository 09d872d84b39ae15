package scenario

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/chaos/report"
	"github.com/quorumlock/quorumlock/chaos/workload"
)

// OutEnv names the environment variable that overrides the output folder.
const OutEnv = "REDLOCK_CHAOS_OUT"

// OutDir returns the folder for reports and timelines: OutEnv, or out/ at
// the root of the chaos module, found from the working directory. It
// creates the folder.
func OutDir() (string, error) {
	dir := os.Getenv(OutEnv)
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "out")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// moduleRoot walks up from the working directory to the chaos module's go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for range 10 {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/quorumlock/quorumlock/chaos\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("scenario: cannot find the chaos module's go.mod above the working directory; set " + OutEnv)
}

// Row returns the result's line of the report table.
func (r *Result) Row() report.Row {
	c4 := "ok"
	switch {
	case len(r.C4.Failed) > 0:
		c4 = fmt.Sprintf("%d failed tokens left", len(r.C4.Failed))
	case len(r.C4.NoTTL) > 0:
		c4 = fmt.Sprintf("%d keys without TTL", len(r.C4.NoTTL))
	case !r.Live.OK:
		c4 = "no lock after heal"
	}
	if c4 == "ok" && r.Live.OK {
		c4 = "ok, relock " + shortDuration(r.Live.Took)
	}
	verdict := "as expected"
	if !r.Pass() {
		verdict = "UNEXPECTED"
	}
	return report.Row{
		Scenario: r.Scenario.Title(), Backend: r.Backend,
		Ops: r.Attempts, Locks: r.Locks,
		C1: len(r.C1), C2: r.C2.Share(),
		C3Rejected: r.C3.Rejected, C3Stale: len(r.C3.Stale),
		C4:  c4,
		P50: r.P50, P99: r.P99, Wall: r.Wall,
		Verdict: verdict,
	}
}

func shortDuration(d time.Duration) string {
	if d < 10*time.Millisecond {
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// progressStart writes the line that says a scenario began.
func progressStart(w io.Writer, backend string, s *Scenario) {
	fmt.Fprintf(w, "chaos [%s] %s: %s ...\n", backend, s.Title(), s.Shows)
}

// progressEnd writes the line that sums a run up.
func progressEnd(w io.Writer, r *Result) {
	row := r.Row()
	fmt.Fprintf(w, "chaos [%s] %s: %d ops, %d locks, C1 %d, C2 %.1f%% lost, C3 %d rejected/%d stale by %s, C4 %s, p99 %s, %s: %s (expected: %s)\n",
		r.Backend, r.Scenario.Title(), row.Ops, row.Locks, row.C1, 100*row.C2, row.C3Rejected, row.C3Stale, r.storeName(), row.C4,
		shortDuration(row.P99), shortDuration(row.Wall), row.Verdict, r.Scenario.Expected)
	if r.C5 != nil {
		fmt.Fprintf(w, "    %s\n", w5Summary(*r.C5))
	}
	if r.Scenario.Permits > 0 {
		fmt.Fprintf(w, "    C6: %d acquisitions beyond %d permits (C1 to C3 do not apply)\n", len(r.C6), r.Scenario.Permits)
	}
	if r.Scenario.ReadWrite {
		fmt.Fprintf(w, "    C7: %d pairs of holds with a writer overlap (C1 to C3 do not apply)\n", len(r.C7))
	}
	if r.Scenario.Mode == workload.LockMode {
		if n, median, longest := lockWaits(r.Record.Attempts); n > 0 {
			fmt.Fprintf(w, "    Lock waits: %d granted, median %s, longest %s\n", n, shortDuration(median), shortDuration(longest))
		}
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "    problem: %s\n", p)
	}
}

// storeName is the fenced store's database, with "unguarded" when its
// writes skip the guard.
func (r *Result) storeName() string {
	name := strings.SplitN(r.Store, ",", 2)[0] // "PostgreSQL 15.18"
	if r.Scenario.Unguarded {
		name += " unguarded"
	}
	return name
}
