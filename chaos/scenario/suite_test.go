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

// TestScenarios runs every scenario on every backend REDLOCK_CHAOS_BACKEND
// asks for, checks each outcome against the scenario's expectation, writes
// a timeline per run and a report table per backend under out/, and prints
// a progress line per scenario.
func TestScenarios(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	backends, err := cluster.Backends(ctx, t)
	require.NoError(t, err)
	out, err := OutDir()
	require.NoError(t, err)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(SeedEnv); s != "" {
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, SeedEnv)
	}
	fmt.Printf("chaos: seed %d (%s=%d replays the clients' pauses), output in %s\n", seed, SeedEnv, seed, out)
	stores, err := OpenStores(t)
	require.NoError(t, err)
	fmt.Printf("chaos: C3's fenced store is %s, written through the fencing guard (%s picks postgres or sqlite)\n", stores.Name(), StoreEnv)

	for _, b := range backends {
		var rows []report.Row
		t.Run(b.Name(), func(t *testing.T) {
			if d, ok := b.(*cluster.Docker); ok {
				name, built := d.Image()
				fmt.Printf("chaos [docker] image %s (built by this run: %v)\n", name, built)
			}
			for _, s := range All() {
				t.Run(s.ID+"-"+s.Name, func(t *testing.T) {
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
					rows = append(rows, r.Row())
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
