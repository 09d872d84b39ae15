package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"
)

// Environment variables of TestReport.
const (
	reportEnv       = "QUORUMLOCK_BENCH_REPORT" // set to run the report
	reportRoundsEnv = "QUORUMLOCK_BENCH_ROUNDS" // rounds, default 5
	reportOutEnv    = "QUORUMLOCK_BENCH_OUT"    // also write the report to this file
)

// Per-round bounds of each run: whichever of count and time comes first.
const (
	seqMaxOps      = 5000
	seqMaxTime     = 700 * time.Millisecond
	slowMaxTime    = 1500 * time.Millisecond
	contendTime    = 2 * time.Second
	contendMaxLock = 1 << 20
)

// TestReport runs every scenario for every contender in rounds, on the same
// five masters in one process, and prints the comparison tables: each cell
// is the median over the rounds with the range, and each target is checked
// on ratios taken within a round. Within a round the contenders take turns
// in rotating order, so that a burst of load from elsewhere on the machine
// does not fall on one of them only.
//
//	QUORUMLOCK_BENCH_REPORT=1 go test -run TestReport -v -timeout 30m .
func TestReport(t *testing.T) {
	if os.Getenv(reportEnv) == "" {
		t.Skipf("set %s=1 to run the comparison report (about 20 s per round)", reportEnv)
	}
	rounds := 5
	if s := os.Getenv(reportRoundsEnv); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, reportRoundsEnv)
		require.True(t, n > 0 && n <= 100, "%s must be in 1..100", reportRoundsEnv)
		rounds = n
	}
	cl := startCluster(t)
	healthy := contenders(t, cl.addrs)
	slow := contenders(t, cl.slow)
	for _, c := range healthy {
		warmUp(t, c, "warm:"+c.Name)
	}
	for _, c := range slow {
		warmUp(t, c, "warm-slow:"+c.Name)
	}
	o := NewObserver("", time.Now(), libScripts(t).acquire)
	variants := contentionVariants(t, cl.addrs, o)

	ctx := context.Background()
	var all []Round
	for r := range rounds {
		round := Round{}
		for _, k := range []string{"distinct", "same"} {
			for _, c := range rotate(healthy, r) {
				keys := SameKey(fmt.Sprintf("same:%s:%d", c.Name, r))
				if k == "distinct" {
					keys = DistinctKeys(fmt.Sprintf("distinct:%s:%d", c.Name, r), seqMaxOps)
				}
				c0, m0 := cpuUsed(t, cl.addrs)
				res, err := RunSequential(ctx, c, keys, seqMaxOps, seqMaxTime)
				require.NoError(t, err)
				c1, m1 := cpuUsed(t, cl.addrs)
				recordSeq(round, "seq-"+k+"/"+c.Name, res)
				recordCPU(round, "seq-"+k+"/"+c.Name, res.Ops, c1-c0, m1-m0)
			}
		}
		for _, c := range rotate(slow, r) {
			res, err := RunSequential(ctx, c, DistinctKeys(fmt.Sprintf("slow:%s:%d", c.Name, r), seqMaxOps), seqMaxOps, slowMaxTime)
			require.NoError(t, err)
			recordSeq(round, "slow/"+c.Name, res)
			time.Sleep(2 * nodeTimeout) // the slow master's stragglers land
		}
		for _, v := range rotate(variants, r) {
			key := fmt.Sprintf("contend:%s:%d", v.name, r)
			base := time.Now()
			o.Reset(key, base)
			res, err := RunContention(ctx, ContentionConfig{
				Key: key, Waiters: v.waiters, Duration: contendTime, MaxLocks: contendMaxLock,
				Quorum: quorum, Observer: o, Base: base, MeasureStalls: true,
			})
			require.NoError(t, err)
			recordContention(round, "contend/"+v.name, res, o.Dropped(), residue(t, cl.addrs, key))
		}
		all = append(all, round)
		t.Logf("round %d of %d done", r+1, rounds)
	}

	out := reportHeader(t, cl, rounds) + "\n" + reportTables(all)
	fmt.Print(out)
	if path := os.Getenv(reportOutEnv); path != "" {
		require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
	}
}

// rotate returns xs starting at index r mod len(xs).
func rotate[T any](xs []T, r int) []T {
	k := r % len(xs)
	return append(append([]T(nil), xs[k:]...), xs[:k]...)
}

func recordSeq(r Round, row string, s *SeqResult) {
	r[row+"/p50_us"] = micros(s.Latency.Quantile(0.5))
	r[row+"/p99_us"] = micros(s.Latency.Quantile(0.99))
	r[row+"/ops_s"] = s.OpsPerSec()
	r[row+"/ops"] = float64(s.Ops)
	r[row+"/errors"] = float64(s.Errors)
}

// recordCPU notes CPU per operation: this process's, and the masters'
// together. Both include the measuring itself and any background clean-up
// of earlier operations that ran meanwhile.
func recordCPU(r Round, row string, ops int, client, masters time.Duration) {
	if ops == 0 {
		return
	}
	r[row+"/client_cpu_us"] = micros(client) / float64(ops)
	r[row+"/masters_cpu_us"] = micros(masters) / float64(ops)
}

func recordContention(r Round, row string, c *ContentionResult, dropped, residue int) {
	r[row+"/locks_s"] = c.Throughput()
	r[row+"/locks"] = float64(c.Locks)
	r[row+"/handoff_p50_ms"] = millis(c.Handoff.Quantile(0.5))
	r[row+"/handoff_p99_ms"] = millis(c.Handoff.Quantile(0.99))
	r[row+"/self_pct"] = 100 * float64(c.SelfHandoffs) / float64(max(c.Handoff.Count(), 1))
	r[row+"/max_share_pct"] = 100 * c.MaxShare()
	r[row+"/wait_p50_ms"] = millis(c.Wait.Quantile(0.5))
	r[row+"/max_wait_ms"] = millis(c.MaxWait)
	r[row+"/max_stall_ms"] = millis(c.MaxStall)
	r[row+"/attempts_lock"] = float64(c.Attempts) / float64(max(c.Locks, 1))
	r[row+"/split_pct"] = 100 * float64(c.Splits) / float64(max(c.Attempts, 1))
	r[row+"/splits_lock"] = float64(c.Splits) / float64(max(c.Locks, 1))
	r[row+"/split_res_p50_ms"] = millis(c.SplitResolve.Quantile(0.5))
	r[row+"/split_res_p99_ms"] = millis(c.SplitResolve.Quantile(0.99))
	r[row+"/split_res_max_ms"] = millis(c.SplitResolve.Max())
	r[row+"/unresolved"] = float64(c.Unresolved)
	r[row+"/overlaps"] = float64(c.Overlaps)
	r[row+"/errors"] = float64(c.Errors)
	r[row+"/dropped"] = float64(dropped)
	r[row+"/residue"] = float64(residue)
}

func reportHeader(t *testing.T, cl *cluster, rounds int) string {
	t.Helper()
	info, err := redis.String(do(t, cl.addrs[0], "INFO", "server"), nil)
	require.NoError(t, err)
	version := "?"
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			version = v
		}
	}
	return fmt.Sprintf("Run %s: %s %s/%s, %d CPUs (GOMAXPROCS %d), redis-server %s, 5 local masters, "+
		"TTL %v, node timeout %v, %d rounds. Cells: median (min–max) over the rounds.\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.Version(), runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), runtime.GOMAXPROCS(0), version, lockTTL, nodeTimeout, rounds)
}

func reportTables(rounds []Round) string {
	libs := []string{"quorumlock", "redsync", "floor", "floor-lua"}
	seqCols := []Column{
		{"p50 µs", "p50_us", "%.0f"}, {"p99 µs", "p99_us", "%.0f"},
		{"ops/s", "ops_s", "%.0f"}, {"errors", "errors", "%.0f"},
	}
	cpuCols := append(seqCols[:len(seqCols):len(seqCols)],
		Column{"client CPU µs/op", "client_cpu_us", "%.0f"}, Column{"masters' CPU µs/op", "masters_cpu_us", "%.0f"})
	var seqRows, slowRows []Row
	for _, k := range []string{"distinct", "same"} {
		for _, l := range libs {
			seqRows = append(seqRows, Row{l + ", " + k + " keys", "seq-" + k + "/" + l})
		}
	}
	for _, l := range libs {
		slowRows = append(slowRows, Row{l, "slow/" + l})
	}
	vs := []string{"quorumlock-shared", "quorumlock-8clients", "redsync", "redsync-retry4ms"}
	var cRows []Row
	for _, v := range vs {
		cRows = append(cRows, Row{v, "contend/" + v})
	}
	tables := []Table{
		{"### 1 client, sequential acquire+release, 5 healthy masters", seqRows, cpuCols},
		{"### 1 client, new keys, one master of five answering 20 ms late", slowRows, seqCols},
		{"### 8 goroutines contending for one key, no hold time", cRows, []Column{
			{"locks/s", "locks_s", "%.0f"}, {"hand-off p50 ms", "handoff_p50_ms", "%.2f"},
			{"hand-off p99 ms", "handoff_p99_ms", "%.1f"}, {"same holder again %", "self_pct", "%.0f"},
			{"max share %", "max_share_pct", "%.1f"}, {"wait p50 ms", "wait_p50_ms", "%.1f"},
			{"longest wait ms", "max_wait_ms", "%.0f"}, {"longest stall ms", "max_stall_ms", "%.0f"},
			{"overlaps", "overlaps", "%.0f"},
			{"errors", "errors", "%.0f"}, {"keys left", "residue", "%.0f"},
		}},
		{"### Split votes in the same runs (attempts seen on the wire)", cRows, []Column{
			{"attempts/lock", "attempts_lock", "%.2f"}, {"split attempts %", "split_pct", "%.1f"},
			{"splits/lock", "splits_lock", "%.2f"}, {"resolved in p50 ms", "split_res_p50_ms", "%.2f"},
			{"p99 ms", "split_res_p99_ms", "%.1f"}, {"max ms", "split_res_max_ms", "%.1f"},
			{"unresolved", "unresolved", "%.0f"},
		}},
	}
	targets := []Target{
		{Title: "p50 quorumlock / floor, distinct keys", Value: Ratio("seq-distinct/quorumlock/p50_us", "seq-distinct/floor/p50_us"), Limit: 1.1, Verb: "%.2f"},
		{Title: "p50 quorumlock / floor, same key", Value: Ratio("seq-same/quorumlock/p50_us", "seq-same/floor/p50_us"), Limit: 1.1, Verb: "%.2f"},
		{Title: "ops/s quorumlock / redsync, distinct keys", Value: Ratio("seq-distinct/quorumlock/ops_s", "seq-distinct/redsync/ops_s"), Limit: 1.3, AtLeast: true, Verb: "%.2f"},
		{Title: "ops/s quorumlock / redsync, same key", Value: Ratio("seq-same/quorumlock/ops_s", "seq-same/redsync/ops_s"), Limit: 1.3, AtLeast: true, Verb: "%.2f"},
		{Title: "p50 quorumlock, 1 master 20 ms late / floor's healthy p50", Value: Ratio("slow/quorumlock/p50_us", "seq-distinct/floor/p50_us"), Limit: 1.5, Verb: "%.2f"},
	}
	for _, v := range []string{"quorumlock-shared", "quorumlock-8clients"} {
		row := "contend/" + v
		targets = append(targets,
			Target{Title: v + ": hand-off p50 ms", Value: Value(row + "/handoff_p50_ms"), Limit: 2, Verb: "%.2f"},
			Target{Title: v + ": max share %", Value: Value(row + "/max_share_pct"), Limit: 25, Verb: "%.1f"},
			Target{Title: v + ": longest wait ms", Value: Value(row + "/max_wait_ms"), Limit: 100, Verb: "%.0f"},
			Target{Title: v + ": locks/s / redsync's", Value: Ratio(row+"/locks_s", "contend/redsync/locks_s"), Limit: 1, AtLeast: true, Verb: "%.2f"},
		)
	}
	var b strings.Builder
	for _, tb := range tables {
		b.WriteString(tb.Markdown(rounds) + "\n")
	}
	b.WriteString(TargetsMarkdown("### Targets (ratios within a round)", targets, rounds))
	b.WriteString("\n### Where the difference comes from (same-round ratios, not targets)\n\n| ratio | median (min–max) |\n|---|---|\n")
	for _, d := range []struct {
		title string
		value func(Round) (float64, bool)
	}{
		{"p50 floor-lua / floor, distinct keys: the library's scripts on the masters", Ratio("seq-distinct/floor-lua/p50_us", "seq-distinct/floor/p50_us")},
		{"p50 quorumlock / floor-lua, distinct keys: the library's client code", Ratio("seq-distinct/quorumlock/p50_us", "seq-distinct/floor-lua/p50_us")},
		{"p50 floor-lua / floor, same key", Ratio("seq-same/floor-lua/p50_us", "seq-same/floor/p50_us")},
		{"p50 quorumlock / floor-lua, same key", Ratio("seq-same/quorumlock/p50_us", "seq-same/floor-lua/p50_us")},
		{"masters' CPU per op, quorumlock / floor, distinct keys", Ratio("seq-distinct/quorumlock/masters_cpu_us", "seq-distinct/floor/masters_cpu_us")},
		{"client CPU per op, quorumlock / floor, distinct keys", Ratio("seq-distinct/quorumlock/client_cpu_us", "seq-distinct/floor/client_cpu_us")},
		{"ops/s floor / redsync, distinct keys: the most any client could gain", Ratio("seq-distinct/floor/ops_s", "seq-distinct/redsync/ops_s")},
		{"p50 floor, 1 master late / floor healthy", Ratio("slow/floor/p50_us", "seq-distinct/floor/p50_us")},
		{"p50 quorumlock, 1 master late / quorumlock healthy", Ratio("slow/quorumlock/p50_us", "seq-distinct/quorumlock/p50_us")},
		{"p50 redsync, 1 master late / quorumlock, 1 master late", Ratio("slow/redsync/p50_us", "slow/quorumlock/p50_us")},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", d.title, Summarise(series(rounds, d.value)).Format("%.2f"))
	}
	return b.String()
}

// series returns a per-round derived value over the rounds that have it.
func series(rounds []Round, f func(Round) (float64, bool)) []float64 {
	var xs []float64
	for _, r := range rounds {
		if v, ok := f(r); ok {
			xs = append(xs, v)
		}
	}
	return xs
}
