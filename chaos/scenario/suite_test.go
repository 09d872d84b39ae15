package scenario

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/chaos/cluster"
	"github.com/quorumlock/quorumlock/chaos/report"
	"github.com/quorumlock/quorumlock/chaos/workload"
)

func TestMain(m *testing.M) {
	if workload.IsChild() { // a client process of a scenario with Processes
		os.Exit(workload.ChildMain())
	}
	goleak.VerifyTestMain(m, cluster.KnownLeaks()...)
}

// SeedEnv names the environment variable that fixes the clients' random
// pauses, to replay a run's choices.
const SeedEnv = "REDLOCK_CHAOS_SEED"

// setUp returns what a test of scenarios runs them with: the backends
// REDLOCK_CHAOS_BACKEND asks for, the output directory, the seed (SeedEnv's,
// or a new one, which replays what replays says) and C3's fenced stores.
func setUp(ctx context.Context, t *testing.T, replays string) ([]cluster.Backend, string, uint64, *Stores) {
	backends, err := cluster.Backends(ctx, t)
	require.NoError(t, err)
	out, err := OutDir()
	require.NoError(t, err)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(SeedEnv); s != "" {
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, SeedEnv)
	}
	fmt.Printf("chaos: seed %d (%s=%d replays %s), output in %s\n", seed, SeedEnv, seed, replays, out)
	stores, err := OpenStores(t)
	require.NoError(t, err)
	fmt.Printf("chaos: C3's fenced store is %s, written through the fencing guard (%s picks postgres or sqlite)\n", stores.Name(), StoreEnv)
	return backends, out, seed, stores
}

// runOne runs scenario s on backend b and checks its outcome against its
// expectation, writing its timeline (and, when it fails, its dump) under
// out. It reports false when the backend cannot run s.
func runOne(ctx context.Context, t *testing.T, b cluster.Backend, s *Scenario, seed uint64, stores *Stores, out string) (report.Row, bool) {
	ignore := goleak.IgnoreCurrent()
	// Registered first, so it runs after every other clean-up.
	t.Cleanup(func() { goleak.VerifyNone(t, append(cluster.KnownLeaks(), ignore)...) })
	progressStart(os.Stdout, b.Name(), s)
	r, err := Run(ctx, t, b, s, seed, stores)
	if errors.Is(err, cluster.ErrUnsupported) {
		fmt.Printf("chaos [%s] %s: skipped: %v\n", b.Name(), s.Title(), err)
		t.Skip(err)
	}
	require.NoError(t, err)
	progressEnd(os.Stdout, r)
	if err := writeTimeline(out, r); err != nil {
		t.Errorf("timeline: %v", err)
	}
	for _, p := range r.Problems {
		t.Error(p)
	}
	if !r.Pass() {
		if err := writeDump(out, r); err != nil {
			t.Errorf("dump: %v", err)
		}
	}
	return r.Row(), true
}

// SoakEnv names the environment variable that runs TestSoak, for as long as
// it says ("10m"): make chaos-soak.
const SoakEnv = "REDLOCK_CHAOS_SOAK"

// TestSoak runs scenario 20, the rolling faults, for SoakEnv's duration on
// the process backend (REDLOCK_CHAOS_BACKEND picks another), and skips
// without it.
func TestSoak(t *testing.T) {
	v := os.Getenv(SoakEnv)
	if v == "" {
		t.Skipf("%s is not set: make chaos-soak runs it", SoakEnv)
	}
	run, err := time.ParseDuration(v)
	require.NoError(t, err, SoakEnv)
	require.Positive(t, run, SoakEnv)
	ctx, cancel := context.WithTimeout(context.Background(), run+5*time.Minute)
	defer cancel()
	backends, out, seed, stores := setUp(ctx, t, "the faults and the clients' pauses")
	for _, b := range backends {
		t.Run(b.Name(), func(t *testing.T) {
			s := soak(run, seed)
			t.Run(s.ID+"-"+s.Name, func(t *testing.T) { runOne(ctx, t, b, s, seed, stores, out) })
		})
	}
}

// TestScenarios runs every scenario on every backend REDLOCK_CHAOS_BACKEND
// asks for, checks each outcome against the scenario's expectation, writes
// a timeline per run and a report table per backend under out/, and prints
// a progress line per scenario.
func TestScenarios(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	backends, out, seed, stores := setUp(ctx, t, "the clients' pauses")

	for _, b := range backends {
		var rows []report.Row
		t.Run(b.Name(), func(t *testing.T) {
			if d, ok := b.(*cluster.Docker); ok {
				name, built := d.Image()
				fmt.Printf("chaos [docker] image %s (built by this run: %v)\n", name, built)
			}
			for _, s := range All() {
				t.Run(s.ID+"-"+s.Name, func(t *testing.T) {
					if row, ok := runOne(ctx, t, b, s, seed, stores, out); ok {
						rows = append(rows, row)
					}
				})
			}
		})
		table := fmt.Sprintf("C3 judged by a real database: %s.\n\n%s", stores.Name(), report.Table(rows))
		fmt.Printf("\nchaos report, %s backend:\n%s\n", b.Name(), table)
		path := filepath.Join(out, "report-"+b.Name()+".md")
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Errorf("report: %v", err)
		}
	}
}
