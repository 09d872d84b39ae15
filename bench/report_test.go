package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/histogram"
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
	parGoroutines  = 64
	parMaxOps      = 1 << 20
	parMaxTime     = 1500 * time.Millisecond
	contendTime    = 2 * time.Second
	contendMaxLock = 1 << 20
)

// TestReport runs every scenario for every contender in rounds, on the same
// five masters in one process, and the scale run on three masters and three
// clusters of three shards, and prints the comparison tables: each cell
// is the median over the rounds with the range, and each target is checked
// on ratios taken within a round. Within a round the contenders take turns
// in rotating order, so that a burst of load from elsewhere on the machine
// does not fall on one of them only.
//
//	QUORUMLOCK_BENCH_REPORT=1 go test -run TestReport -v -timeout 30m .
func TestReport(t *testing.T) {
	if os.Getenv(reportEnv) == "" {
		t.Skipf("set %s=1 to run the comparison report (about 100 s per round)", reportEnv)
	}
	rounds := reportRounds(t)
	loadBefore := loadAverage()
	cl := startTestbed(t)
	// Before any load: what a round trip costs direct and through a proxy.
	pings := [2]time.Duration{pingP50(t, cl.addrs[0]), pingP50(t, cl.lan[0])}
	meter, err := NewMeter(cl.addrs)
	require.NoError(t, err)
	defer meter.Close()
	healthy := contenders(t, cl.addrs, allNames())
	slow := contenders(t, cl.slow, coreNames())
	lan := contenders(t, cl.lan, coreNames())
	ctx := context.Background()
	for _, set := range []struct {
		name string
		cs   []namedLocker
	}{{"warm", healthy}, {"warm-slow", slow}, {"warm-lan", lan}} {
		for _, c := range set.cs {
			warmUp(t, c, set.name+":"+c.Name)
			if set.name != "warm-slow" { // connections for 64 goroutines
				_, err := RunParallel(ctx, c, set.name+":par:"+c.Name, parGoroutines, parMaxOps, 300*time.Millisecond)
				require.NoError(t, err)
				settle()
			}
		}
	}
	o := NewObserver("", time.Now(), libScripts(t).acquire)
	variants := contentionVariants(t, cl.addrs, o)
	scale := startScaleSets(t)

	var all []Round
	for r := range rounds {
		round := Round{}
		for _, k := range []string{"distinct", "same"} {
			for _, c := range rotate(healthy, r) {
				keys := SameKey(fmt.Sprintf("same:%s:%d", c.Name, r))
				if k == "distinct" {
					keys = DistinctKeys(fmt.Sprintf("distinct:%s:%d", c.Name, r), seqMaxOps)
				}
				before, sent := readCosts(t, meter), c.Sent.Load()
				res, err := RunSequential(ctx, c, keys, seqMaxOps, seqMaxTime)
				require.NoError(t, err)
				row := "seq-" + k + "/" + c.Name
				recordSeq(round, row, res)
				recordCosts(round, row, res.Ops, readCosts(t, meter).Sub(before), c.Sent.Load()-sent)
			}
		}
		for _, c := range rotate(slow, r) {
			res, err := RunSequential(ctx, c, DistinctKeys(fmt.Sprintf("slow:%s:%d", c.Name, r), seqMaxOps), seqMaxOps, slowMaxTime)
			require.NoError(t, err)
			recordSeq(round, "slow/"+c.Name, res)
			time.Sleep(2 * nodeTimeout) // the slow master's stragglers land
		}
		for _, c := range rotate(healthy, r) {
			before, sent := readCosts(t, meter), c.Sent.Load()
			res, err := RunParallel(ctx, c, fmt.Sprintf("par:%s:%d", c.Name, r), parGoroutines, parMaxOps, parMaxTime)
			require.NoError(t, err)
			row := "par/" + c.Name
			recordPar(round, row, res)
			recordCosts(round, row, res.Ops, readCosts(t, meter).Sub(before), c.Sent.Load()-sent)
			settle()
		}
		for _, c := range rotate(lan, r) {
			res, err := RunParallel(ctx, c, fmt.Sprintf("lan:%s:%d", c.Name, r), parGoroutines, parMaxOps, parMaxTime)
			require.NoError(t, err)
			recordPar(round, "lan/"+c.Name, res)
			settle()
		}
		runScaleRound(t, round, scale, r)
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

	out := reportHeader(t, cl, rounds, pings) + scaleHeader(scale) +
		fmt.Sprintf("Load average (1, 5, 15 min) before the run: %s; after: %s.\n", loadBefore, loadAverage()) +
		"\n" + reportTables(all)
	fmt.Print(out)
	if path := os.Getenv(reportOutEnv); path != "" {
		require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
	}
}

// loadAverage returns the machine's load averages as /proc/loadavg gives
// them, or "n/a".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if err != nil || len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], ", ")
}

// reportRounds returns the rounds a report runs: QUORUMLOCK_BENCH_ROUNDS,
// or 5.
func reportRounds(t *testing.T) int {
	s := os.Getenv(reportRoundsEnv)
	if s == "" {
		return 5
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, reportRoundsEnv)
	require.True(t, n > 0 && n <= 100, "%s must be in 1..100", reportRoundsEnv)
	return n
}

// rotate returns xs starting at index r mod len(xs).
func rotate[T any](xs []T, r int) []T {
	k := r % len(xs)
	return append(append([]T(nil), xs[k:]...), xs[:k]...)
}

func readCosts(t *testing.T, m *Meter) Costs {
	t.Helper()
	c, err := m.Read()
	require.NoError(t, err)
	return c
}

func recordSeq(r Round, row string, s *SeqResult) {
	r[row+"/p50_us"] = micros(s.Latency.Quantile(0.5))
	r[row+"/p99_us"] = micros(s.Latency.Quantile(0.99))
	r[row+"/ops_s"] = s.OpsPerSec()
	r[row+"/ops"] = float64(s.Ops)
	r[row+"/errors"] = float64(s.Errors)
}

func recordPar(r Round, row string, p *ParResult) {
	r[row+"/ops_s"] = p.OpsPerSec()
	r[row+"/ops"] = float64(p.Ops)
	r[row+"/failed_pct"] = 100 * float64(p.Errors) / float64(max(p.Ops, 1))
	r[row+"/p50_ms"] = millis(p.Latency.Quantile(0.5))
	r[row+"/p99_ms"] = millis(p.Latency.Quantile(0.99))
}

// recordCosts notes the costs per operation (acquire + release): this
// process's CPU, allocations and read/write system calls, the commands the
// contender sent (counted on its side), and the masters' CPU and new
// connections, summed over the masters; and the busiest master's CPU, with
// the locks per second at which it would use a whole core. The client's
// include the measuring itself and any background clean-up of earlier
// operations that ran meanwhile.
func recordCosts(r Round, row string, ops int, c Costs, sent int64) {
	if ops == 0 {
		return
	}
	n := float64(ops)
	r[row+"/client_cpu_us"] = micros(c.ClientCPU) / n
	r[row+"/allocs_op"] = float64(c.Mallocs) / n
	r[row+"/kb_op"] = float64(c.Bytes) / 1024 / n
	if !math.IsNaN(c.Syscalls) {
		r[row+"/syscalls_op"] = c.Syscalls / n
	}
	r[row+"/masters_cpu_us"] = micros(c.MastersCPU) / n
	if busiest := micros(c.BusiestMaster()) / n; busiest > 0 {
		r[row+"/busiest_cpu_us"] = busiest
		r[row+"/ceiling_locks_s"] = 1e6 / busiest
	}
	r[row+"/commands_op"] = float64(sent) / n
	r[row+"/conns_op"] = float64(c.Connections) / n
	r[row+"/server_io_op"] = float64(c.ServerIO) / n
	if !math.IsNaN(c.Wakeups) {
		r[row+"/wakeups_op"] = c.Wakeups / n
	}
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

func reportHeader(t *testing.T, cl *testbed, rounds int, pings [2]time.Duration) string {
	t.Helper()
	info, err := redis.String(do(t, cl.addrs[0], "INFO", "server"), nil)
	require.NoError(t, err)
	version := "?"
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			version = v
		}
	}
	direct, far := pings[0], pings[1]
	return fmt.Sprintf("Run %s: %s %s/%s, %d CPUs (GOMAXPROCS %d), redis-server %s, 5 local masters, "+
		"TTL %v, node timeout %v, %d rounds; %d goroutines in the parallel runs; a PING's p50 round trip "+
		"%.0f µs direct, %.0f µs through a %v proxy. Cells: median (min–max) over the rounds.\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.Version(), runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), runtime.GOMAXPROCS(0), version, lockTTL, nodeTimeout, rounds, parGoroutines,
		micros(direct), micros(far), lanDelay)
}

// pingP50 is the median of 200 PING round trips to addr on one connection.
func pingP50(t *testing.T, addr string) time.Duration {
	t.Helper()
	c, err := redis.Dial("tcp", addr, redis.DialReadTimeout(5*time.Second))
	require.NoError(t, err)
	defer c.Close()
	var h histogram.Histogram
	for range 200 {
		t0 := time.Now()
		_, err := c.Do("PING")
		require.NoError(t, err)
		h.Record(time.Since(t0))
	}
	return h.Quantile(0.5)
}

func reportTables(rounds []Round) string {
	libs, core := allNames(), coreNames()
	seqCols := []Column{
		{"p50 µs", "p50_us", "%.0f"}, {"p99 µs", "p99_us", "%.0f"},
		{"ops/s", "ops_s", "%.0f"}, {"errors", "errors", "%.0f"},
	}
	costCols := []Column{
		{"client CPU µs", "client_cpu_us", "%.0f"}, {"allocs", "allocs_op", "%.0f"}, {"KB", "kb_op", "%.1f"},
		{"read+write syscalls", "syscalls_op", "%.1f"}, {"masters' CPU µs", "masters_cpu_us", "%.0f"},
		{"commands sent", "commands_op", "%.1f"}, {"new connections", "conns_op", "%.2f"},
	}
	parCols := []Column{
		{"locks/s", "ops_s", "%.0f"}, {"failed %", "failed_pct", "%.1f"},
		{"p50 ms", "p50_ms", "%.2f"}, {"p99 ms", "p99_ms", "%.1f"},
	}
	var seqRows, slowRows, parRows, lanRows []Row
	for _, k := range []string{"distinct", "same"} {
		for _, l := range libs {
			seqRows = append(seqRows, Row{l + ", " + k + " keys", "seq-" + k + "/" + l})
		}
	}
	for _, l := range libs {
		parRows = append(parRows, Row{l, "par/" + l})
	}
	for _, l := range core {
		slowRows = append(slowRows, Row{l, "slow/" + l})
		lanRows = append(lanRows, Row{l, "lan/" + l})
	}
	vs := []string{
		"quorumlock-shared", "quorumlock-8clients", "redsync", "redsync-retry4ms",
		"quorumlock-goredis-8clients", "redsync-goredis", "quorumlock-rueidis-8clients", "redsync-rueidis",
	}
	var cRows []Row
	for _, v := range vs {
		cRows = append(cRows, Row{v, "contend/" + v})
	}
	tables := []Table{
		{"### 64 goroutines, each on new keys, 5 healthy masters", parRows, parCols},
		{"### The same runs: costs per lock (acquire + release)", parRows, costCols},
		{fmt.Sprintf("### 64 goroutines, new keys, every master %v away (round trip)", lanDelay), lanRows, parCols},
		{"### 1 client, sequential acquire+release, 5 healthy masters", seqRows, seqCols},
		{"### The same runs: costs per lock", seqRows, costCols},
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
		{Title: "64 goroutines: locks/s quorumlock / redsync", Value: Ratio("par/quorumlock/ops_s", "par/redsync/ops_s"), Limit: 2, AtLeast: true, Verb: "%.2f"},
		{Title: "64 goroutines: failed attempts % of quorumlock", Value: Value("par/quorumlock/failed_pct"), Limit: 0, Verb: "%.2f"},
		{Title: "64 goroutines, masters 250 µs away: locks/s quorumlock / redsync", Value: Ratio("lan/quorumlock/ops_s", "lan/redsync/ops_s"), Limit: 4, AtLeast: true, Verb: "%.2f"},
		{Title: "1 goroutine: p50 quorumlock / floor, distinct keys", Value: Ratio("seq-distinct/quorumlock/p50_us", "seq-distinct/floor/p50_us"), Limit: 1.15, Verb: "%.2f"},
		{Title: "1 goroutine: p50 quorumlock / floor, same key", Value: Ratio("seq-same/quorumlock/p50_us", "seq-same/floor/p50_us"), Limit: 1.15, Verb: "%.2f"},
		{Title: "64 goroutines: client CPU µs per lock", Value: Value("par/quorumlock/client_cpu_us"), Limit: 60, Verb: "%.0f"},
		{Title: "1 goroutine: allocations per lock", Value: Value("seq-distinct/quorumlock/allocs_op"), Limit: 60, Verb: "%.0f"},
		{Title: "64 goroutines: masters' CPU quorumlock / redsync", Value: Ratio("par/quorumlock/masters_cpu_us", "par/redsync/masters_cpu_us"), Limit: 1, Verb: "%.2f"},
		{Title: "64 goroutines: commands per lock", Value: Value("par/quorumlock/commands_op"), Limit: 10, Verb: "%.2f"},
		{Title: "64 goroutines: new connections per lock", Value: Value("par/quorumlock/conns_op"), Limit: 0, Verb: "%.3f"},
		{Title: "ops/s quorumlock / redsync, 1 goroutine, distinct keys", Value: Ratio("seq-distinct/quorumlock/ops_s", "seq-distinct/redsync/ops_s"), Limit: 1.3, AtLeast: true, Verb: "%.2f"},
		{Title: "p50 quorumlock, 1 master 20 ms late / floor's healthy p50", Value: Ratio("slow/quorumlock/p50_us", "seq-distinct/floor/p50_us"), Limit: 1.5, Verb: "%.2f"},
	}
	for _, v := range []struct {
		name string
		over float64
	}{{"quorumlock-shared", 1.5}, {"quorumlock-8clients", 1}} {
		row := "contend/" + v.name
		targets = append(targets,
			Target{Title: v.name + ": locks/s / redsync's", Value: Ratio(row+"/locks_s", "contend/redsync/locks_s"), Limit: v.over, AtLeast: true, Verb: "%.2f"},
			Target{Title: v.name + ": max share %", Value: Value(row + "/max_share_pct"), Limit: 25, Verb: "%.1f"},
			Target{Title: v.name + ": longest wait ms", Value: Value(row + "/max_wait_ms"), Limit: 100, Verb: "%.0f"},
		)
	}
	// 8 separate clients on one key over the go-redis and the rueidis
	// adapters, each against redsync on the same client library.
	for _, lib := range []string{"goredis", "rueidis"} {
		name, rs := "quorumlock-"+lib+"-8clients", "redsync-"+lib
		row := "contend/" + name
		targets = append(targets,
			Target{Title: name + ": locks/s / " + rs + "'s", Value: Ratio(row+"/locks_s", "contend/"+rs+"/locks_s"), Limit: 1.5, AtLeast: true, Verb: "%.2f"},
			Target{Title: name + ": attempts per lock", Value: Value(row + "/attempts_lock"), Limit: 1.2, Verb: "%.2f"},
			Target{Title: name + ": max share %", Value: Value(row + "/max_share_pct"), Limit: 15, Verb: "%.1f"},
			Target{Title: name + ": longest wait ms", Value: Value(row + "/max_wait_ms"), Limit: 50, Verb: "%.0f"},
		)
	}
	tables = append(tables, scaleTables()...)
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
		{"64 goroutines: locks/s quorumlock / redsync-failfast", Ratio("par/quorumlock/ops_s", "par/redsync-failfast/ops_s")},
		{"64 goroutines: locks/s floor-pipelined / redsync: the ceiling", Ratio("par/floor-pipelined/ops_s", "par/redsync/ops_s")},
		{"64 goroutines: locks/s floor-lua-pipelined / redsync: the ceiling with the library's scripts", Ratio("par/floor-lua-pipelined/ops_s", "par/redsync/ops_s")},
		{"64 goroutines: locks/s quorumlock / floor-lua-pipelined: the library's client code", Ratio("par/quorumlock/ops_s", "par/floor-lua-pipelined/ops_s")},
		{"64 goroutines: client CPU quorumlock / floor-lua-pipelined", Ratio("par/quorumlock/client_cpu_us", "par/floor-lua-pipelined/client_cpu_us")},
		{"64 goroutines: masters' CPU floor-lua / floor: the library's scripts", Ratio("par/floor-lua/masters_cpu_us", "par/floor/masters_cpu_us")},
		{"masters 250 µs away: locks/s quorumlock / redsync-failfast", Ratio("lan/quorumlock/ops_s", "lan/redsync-failfast/ops_s")},
		{"masters 250 µs away: locks/s quorumlock / floor", Ratio("lan/quorumlock/ops_s", "lan/floor/ops_s")},
		{"masters 250 µs away: locks/s floor-pipelined / redsync", Ratio("lan/floor-pipelined/ops_s", "lan/redsync/ops_s")},
		{"1 goroutine: p50 floor-lua / floor, distinct keys: the library's scripts on the masters", Ratio("seq-distinct/floor-lua/p50_us", "seq-distinct/floor/p50_us")},
		{"1 goroutine: p50 quorumlock / floor-lua, distinct keys: the library's client code", Ratio("seq-distinct/quorumlock/p50_us", "seq-distinct/floor-lua/p50_us")},
		{"1 goroutine: masters' CPU per op, quorumlock / floor, distinct keys", Ratio("seq-distinct/quorumlock/masters_cpu_us", "seq-distinct/floor/masters_cpu_us")},
		{"1 goroutine: client CPU per op, quorumlock / floor, distinct keys", Ratio("seq-distinct/quorumlock/client_cpu_us", "seq-distinct/floor/client_cpu_us")},
		{"64 goroutines: locks/s quorumlock-goredis / quorumlock: the go-redis adapter", Ratio("par/quorumlock-goredis/ops_s", "par/quorumlock/ops_s")},
		{"64 goroutines: locks/s quorumlock-rueidis / quorumlock: the rueidis adapter", Ratio("par/quorumlock-rueidis/ops_s", "par/quorumlock/ops_s")},
		{"64 goroutines: locks/s redsync-goredis / redsync: redsync's go-redis adapter", Ratio("par/redsync-goredis/ops_s", "par/redsync/ops_s")},
		{"64 goroutines: locks/s quorumlock-goredis / redsync-goredis: both on go-redis", Ratio("par/quorumlock-goredis/ops_s", "par/redsync-goredis/ops_s")},
		{"1 goroutine: p50 quorumlock-goredis / quorumlock, distinct keys", Ratio("seq-distinct/quorumlock-goredis/p50_us", "seq-distinct/quorumlock/p50_us")},
		{"1 goroutine: p50 quorumlock-rueidis / quorumlock, distinct keys", Ratio("seq-distinct/quorumlock-rueidis/p50_us", "seq-distinct/quorumlock/p50_us")},
		{"1 goroutine: p50 quorumlock-goredis / redsync-goredis, distinct keys", Ratio("seq-distinct/quorumlock-goredis/p50_us", "seq-distinct/redsync-goredis/p50_us")},
		{"1 goroutine: p50 quorumlock-rueidis / redsync-rueidis, distinct keys", Ratio("seq-distinct/quorumlock-rueidis/p50_us", "seq-distinct/redsync-rueidis/p50_us")},
		{"p50 quorumlock, 1 master late / quorumlock healthy", Ratio("slow/quorumlock/p50_us", "seq-distinct/quorumlock/p50_us")},
		{"p50 redsync-failfast, 1 master late / quorumlock, 1 master late", Ratio("slow/redsync-failfast/p50_us", "slow/quorumlock/p50_us")},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", d.title, Summarise(series(rounds, d.value)).Format("%.2f"))
	}
	b.WriteString("\n" + scaleRatios(rounds))
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
