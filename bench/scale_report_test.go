package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scaleSet is one topology of the scale run with its meter and contenders.
type scaleSet struct {
	topology
	meter *Meter
	cs    []namedLocker
	idle  time.Duration // the masters' CPU per second with no client
}

// startScaleSets starts the scale run's topologies and contenders, warms
// the contenders up (connections for 64 goroutines, scripts loaded) and
// measures what the idle masters use.
func startScaleSets(t *testing.T) []*scaleSet {
	t.Helper()
	ctx := context.Background()
	var sets []*scaleSet
	for _, topo := range startTopologies(t) {
		m, err := NewMeter(topo.masters)
		require.NoError(t, err)
		t.Cleanup(func() { m.Close() })
		s := &scaleSet{topology: topo, meter: m, cs: scaleContenders(t, topo)}
		for _, c := range s.cs {
			prefix := "warm-scale:" + topo.name + ":" + c.Name
			warmUp(t, c, prefix)
			_, err := RunParallel(ctx, c, prefix+":par", parGoroutines, parMaxOps, 300*time.Millisecond)
			require.NoError(t, err)
			settle()
		}
		sets = append(sets, s)
	}
	for _, s := range sets {
		s.idle = idleMastersCPU(t, s.meter, time.Second)
	}
	return sets
}

// runScaleRound runs every contender of the scale run once on each
// topology: the contenders take turns in rotating order, each on both
// topologies one after the other (which goes first alternates with the
// rounds), so that a ratio between topologies compares runs a few seconds
// apart.
func runScaleRound(t *testing.T, round Round, sets []*scaleSet, r int) {
	t.Helper()
	ctx := context.Background()
	order := sets
	if r%2 == 1 {
		order = []*scaleSet{sets[1], sets[0]}
	}
	for _, name := range rotate(scaleNames(sets[0].topology), r) {
		for _, s := range order {
			c, ok := s.contender(name)
			if !ok {
				continue
			}
			before, sent := readCosts(t, s.meter), c.Sent.Load()
			res, err := RunParallel(ctx, c, fmt.Sprintf("scale:%s:%s:%d", s.name, name, r), parGoroutines, parMaxOps, parMaxTime)
			require.NoError(t, err)
			row := "scale-" + s.name + "/" + name
			recordPar(round, row, res)
			recordCosts(round, row, res.Ops, readCosts(t, s.meter).Sub(before), c.Sent.Load()-sent)
			settle()
		}
	}
}

func (s *scaleSet) contender(name string) (namedLocker, bool) {
	for _, c := range s.cs {
		if c.Name == name {
			return c, true
		}
	}
	return namedLocker{}, false
}

// scaleHeader describes the scale run's topologies for the report.
func scaleHeader(sets []*scaleSet) string {
	var parts []string
	for _, s := range sets {
		parts = append(parts, fmt.Sprintf("%s (%d master processes; idle, they use %.0f µs of CPU per second)",
			s.title, len(s.masters), micros(s.idle)))
	}
	return fmt.Sprintf("Scale run: TryLock+Release from %d goroutines on new keys, on %s; clusters without replicas, "+
		"cluster-node-timeout %v.\n", parGoroutines, strings.Join(parts, ", and on "), scaleClusterTimeout)
}

// scaleRows returns a row per contender and topology of the scale run.
func scaleRows() []Row {
	masters, clusters := topology{name: "masters"}, topology{name: "clusters"}
	var rows []Row
	for _, name := range scaleNames(masters) {
		rows = append(rows, Row{fmt.Sprintf("%s, %d masters", name, scaleNodes), "scale-masters/" + name})
		if slices.Contains(scaleNames(clusters), name) {
			rows = append(rows, Row{fmt.Sprintf("%s, %d clusters × %d shards", name, scaleNodes, scaleShards), "scale-clusters/" + name})
		}
	}
	return rows
}

// scaleTables are the scale run's tables.
func scaleTables() []Table {
	rows := scaleRows()
	return []Table{
		{fmt.Sprintf("### Scale: 64 goroutines on new keys, %d standalone masters against %d Redis Clusters of %d shards",
			scaleNodes, scaleNodes, scaleShards), rows, []Column{
			{"locks/s", "ops_s", "%.0f"}, {"failed %", "failed_pct", "%.1f"},
			{"p50 ms", "p50_ms", "%.2f"}, {"p99 ms", "p99_ms", "%.1f"},
		}},
		{"### The same runs: costs per lock", rows, []Column{
			{"client CPU µs", "client_cpu_us", "%.0f"},
			{"masters' CPU µs, all", "masters_cpu_us", "%.0f"},
			{"busiest master's CPU µs", "busiest_cpu_us", "%.0f"},
			{"locks/s at a core per master", "ceiling_locks_s", "%.0f"},
			{"commands sent", "commands_op", "%.1f"},
			{"masters' socket reads+writes", "server_io_op", "%.1f"},
			{"masters' wake-ups", "wakeups_op", "%.1f"},
			{"allocs", "allocs_op", "%.0f"},
			{"new connections", "conns_op", "%.2f"},
		}},
	}
}

// scaleRatios is the table of same-round ratios between the topologies,
// per contender.
func scaleRatios(rounds []Round) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Scale: %d clusters × %d shards over %d masters, same-round ratios\n\n", scaleNodes, scaleShards, scaleNodes)
	b.WriteString("| | locks/s | client CPU per lock | masters' CPU per lock, all | busiest master's CPU per lock | locks/s at a core per master | masters' wake-ups per lock |\n|---|---|---|---|---|---|---|\n")
	for _, name := range scaleNames(topology{}) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, m := range []string{"ops_s", "client_cpu_us", "masters_cpu_us", "busiest_cpu_us", "ceiling_locks_s", "wakeups_op"} {
			v := Ratio("scale-clusters/"+name+"/"+m, "scale-masters/"+name+"/"+m)
			fmt.Fprintf(&b, " %s |", Summarise(series(rounds, v)).Format("%.2f"))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| ratio, same round | median (min–max) |\n|---|---|\n")
	for _, d := range []struct {
		title string
		value func(Round) (float64, bool)
	}{
		{"3 masters: locks/s quorumlock-goredis / redsync-goredis", Ratio("scale-masters/quorumlock-goredis/ops_s", "scale-masters/redsync-goredis/ops_s")},
		{"3 clusters: locks/s quorumlock / redsync-goredis", Ratio("scale-clusters/quorumlock/ops_s", "scale-clusters/redsync-goredis/ops_s")},
		{"3 clusters: locks/s quorumlock-goredis / redsync-goredis", Ratio("scale-clusters/quorumlock-goredis/ops_s", "scale-clusters/redsync-goredis/ops_s")},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", d.title, Summarise(series(rounds, d.value)).Format("%.2f"))
	}
	return b.String()
}
