package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/redlock"
)

// semFloorTimeout bounds each of the floor's commands: Redisson's default
// is 3 s; at 1 s, as the redigo pools here, a busy master's late reply is
// waited for rather than leaving a permit behind.
const semFloorTimeout = time.Second

// semHold is how long each holder keeps its permit: with holds of no
// length K would not matter. semPermits/semHold bounds the permits a second.
const semHold = time.Millisecond

// semPermits is the semaphore benchmark's K: on five masters a permit then
// needs every one of them (quorumlock.PermitQuorum), so the library's
// semaphore is made WithEveryMaster.
const semPermits = 4

// newQuorumSemaphore is the library's semaphore of semPermits on fresh
// pipelined connections, restart guard off, as newQuorumLock.
func newQuorumSemaphore(tb testing.TB, addrs []string) *QuorumSemaphore {
	tb.Helper()
	ps := newPools(tb, addrs)
	ms := make([]driver.Master, len(ps))
	for i, p := range ps {
		ms[i] = p
	}
	c, err := redlock.New(ms, redlock.WithRestartGuard(0))
	require.NoError(tb, err)
	q := NewQuorumSemaphore(c, semPermits, lockTTL, redlock.WithEveryMaster())
	tb.Cleanup(func() { q.Close() })
	return q
}

// newQuorumPair is the library taking two keys per lock, at once or one
// after the other, on fresh pipelined connections, restart guard off.
func newQuorumPair(tb testing.TB, addrs []string, atOnce bool) *QuorumPair {
	tb.Helper()
	ps := newPools(tb, addrs)
	ms := make([]driver.Master, len(ps))
	for i, p := range ps {
		ms[i] = p
	}
	c, err := redlock.New(ms, redlock.WithRestartGuard(0))
	require.NoError(tb, err)
	q := NewQuorumPair(c, lockTTL, atOnce)
	tb.Cleanup(func() { q.Close() })
	return q
}

// TestQuorumPair_TakesBothKeysAndLeavesNothing runs both ways of taking
// two keys briefly on new keys: no failure, nothing left.
func TestQuorumPair_TakesBothKeysAndLeavesNothing(t *testing.T) {
	cl := startTestbed(t)
	for _, atOnce := range []bool{true, false} {
		prefix := fmt.Sprintf("pair:%v", atOnce)
		r, err := RunParallel(context.Background(), newQuorumPair(t, cl.addrs, atOnce), prefix, 8, 400, time.Second)
		require.NoError(t, err)
		assert.Zero(t, r.Errors, "first error: %v", r.FirstErr)
		assert.Positive(t, r.Ops)
		for _, a := range cl.addrs {
			assert.Eventually(t, func() bool {
				keys, err := redis.Strings(do(t, a, "KEYS", prefix+":*"), nil)
				return err == nil && len(keys) == 0
			}, 2*time.Second, 5*time.Millisecond, "keys of %s left on %s", prefix, a)
		}
	}
}

// semVariants are the semaphore's contenders: 64 goroutines of one client,
// 8 clients of 8 goroutines, and the single-master floor. Each contends
// for a key of its own, semKey(prefix, name).
func semVariants(tb testing.TB, addrs []string, prefix string) []variant {
	tb.Helper()
	eight := make([]Waiter, 0, parGoroutines)
	for range 8 {
		eight = append(eight, repeat(newQuorumSemaphore(tb, addrs), parGoroutines/8)...)
	}
	floor, err := NewSemFloor(context.Background(), addrs[0], semPermits, semFloorTimeout, lockTTL)
	require.NoError(tb, err)
	tb.Cleanup(func() { floor.Close() })
	require.NoError(tb, floor.Watch(semKey(prefix, "semfloor")))
	return []variant{
		{"semaphore-shared", repeat(newQuorumSemaphore(tb, addrs), parGoroutines)},
		{"semaphore-8clients", eight},
		{"semfloor", repeat(Waiter(floor), parGoroutines)},
	}
}

func semKey(prefix, name string) string { return prefix + ":" + name }

// TestSemaphore_Contended_KeepsTheBound runs each semaphore contender
// briefly: never more than semPermits holders, no error, nothing left.
func TestSemaphore_Contended_KeepsTheBound(t *testing.T) {
	cl := startTestbed(t)
	for _, v := range semVariants(t, cl.addrs, "sem:bound") {
		t.Run(v.name, func(t *testing.T) {
			key := semKey("sem:bound", v.name)
			r, err := RunContention(context.Background(), ContentionConfig{
				Key: key, Waiters: v.waiters, Duration: 300 * time.Millisecond, MaxLocks: 100000, Permits: semPermits, Hold: semHold,
			})
			require.NoError(t, err)
			assert.Zero(t, r.Overlaps, "more than %d holders", semPermits)
			assert.Zero(t, r.Errors, "first error: %v", r.FirstErr)
			assert.Positive(t, r.Locks)
			for _, a := range cl.addrs {
				assert.Eventually(t, func() bool { return !exists(t, a, key) }, 2*time.Second, 5*time.Millisecond, "released on %s", a)
			}
		})
	}
}

// TestReportPrimitives measures the semaphore of semPermits permits, each
// held semHold, under 64 goroutines against the single-master floor, and
// two keys taken at once with TryLockAll against two TryLocks in turn, in rounds with the
// contenders in rotating order, and prints the table; it runs with
// TestReport (make bench-report).
//
//	QUORUMLOCK_BENCH_REPORT=1 go test -run TestReportPrimitives -v .
func TestReportPrimitives(t *testing.T) {
	if os.Getenv(reportEnv) == "" {
		t.Skipf("set %s=1 to run the primitives' report", reportEnv)
	}
	rounds := reportRounds(t)
	cl := startTestbed(t)
	ctx := context.Background()
	vs := semVariants(t, cl.addrs, "sem:report")
	pairs := []struct {
		name string
		q    *QuorumPair
	}{{"lockall", newQuorumPair(t, cl.addrs, true)}, {"two-locks", newQuorumPair(t, cl.addrs, false)}}
	var all []Round
	for r := range rounds {
		round := Round{}
		for _, p := range rotate(pairs, r) {
			res, err := RunParallel(ctx, p.q, fmt.Sprintf("pair:%s:%d", p.name, r), parGoroutines, parMaxOps, parMaxTime)
			require.NoError(t, err)
			round["pair/"+p.name+"/ops"] = res.OpsPerSec()
			round["pair/"+p.name+"/errors"] = float64(res.Errors)
			settle()
		}
		for _, v := range rotate(vs, r) {
			res, err := RunContention(ctx, ContentionConfig{
				Key: semKey("sem:report", v.name), Waiters: v.waiters, Duration: contendTime, MaxLocks: contendMaxLock, Permits: semPermits, Hold: semHold,
			})
			require.NoError(t, err)
			require.Zero(t, res.Overlaps, "%s: more than %d holders", v.name, semPermits)
			round["sem/"+v.name+"/ops"] = res.Throughput()
			round["sem/"+v.name+"/p99"] = float64(res.Wait.Quantile(0.99)) / float64(time.Millisecond)
			round["sem/"+v.name+"/errors"] = float64(res.Errors)
			settle()
		}
		all = append(all, round)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Semaphore: %d permits held %v each, 64 goroutines, one key (%d rounds; at most %.0f permits/s)\n\n",
		semPermits, semHold, rounds, semPermits/semHold.Seconds())
	fmt.Fprintf(&b, "| contender | permits/s | p99 wait | errors |\n|---|---|---|---|\n")
	for _, v := range vs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", v.name,
			Summarise(Series(all, "sem/"+v.name+"/ops")).Format("%.0f"),
			Summarise(Series(all, "sem/"+v.name+"/p99")).Format("%.0f ms"),
			Summarise(Series(all, "sem/"+v.name+"/errors")).Format("%.0f"))
	}
	for _, v := range vs[:2] {
		ratio := Ratio("sem/"+v.name+"/ops", "sem/semfloor/ops")
		var xs []float64
		for _, rd := range all {
			if x, ok := ratio(rd); ok {
				xs = append(xs, x)
			}
		}
		fmt.Fprintf(&b, "\n%s ÷ semfloor, same rounds: %s\n", v.name, Summarise(xs).Format("%.2f×"))
	}
	fmt.Fprintf(&b, "\n## Two keys per lock, 64 goroutines, new keys (%d rounds)\n\n", rounds)
	fmt.Fprintf(&b, "| contender | pairs/s | failed attempts |\n|---|---|---|\n")
	for _, p := range pairs {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", p.name,
			Summarise(Series(all, "pair/"+p.name+"/ops")).Format("%.0f"),
			Summarise(Series(all, "pair/"+p.name+"/errors")).Format("%.0f"))
	}
	var xs []float64
	for _, rd := range all {
		if x, ok := Ratio("pair/lockall/ops", "pair/two-locks/ops")(rd); ok {
			xs = append(xs, x)
		}
	}
	fmt.Fprintf(&b, "\nlockall ÷ two-locks, same rounds: %s\n", Summarise(xs).Format("%.2f×"))
	t.Log(b.String())
	if out := os.Getenv(reportOutEnv); out != "" {
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		_, err = f.WriteString(b.String())
		require.NoError(t, errors.Join(err, f.Close()))
	}
}
