package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/histogram"
)

// BenchmarkAcquireRelease times one client's acquire+release, one after
// another, on five healthy masters: on a new key each time, and on the same
// key. Compare the lib= columns with benchstat -col /lib.
func BenchmarkAcquireRelease(b *testing.B) {
	cl := startTestbed(b)
	cs := contenders(b, cl.addrs, allNames())
	for _, c := range cs {
		warmUp(b, c, "warm:"+c.Name)
	}
	for _, k := range []string{"distinct", "same"} {
		for _, c := range cs {
			b.Run("keys="+k+"/lib="+c.Name, func(b *testing.B) {
				keys := SameKey("bench:same:" + c.Name)
				if k == "distinct" {
					keys = DistinctKeys("bench:distinct:"+c.Name, 1<<16)
				}
				benchSequential(b, c, keys)
			})
		}
	}
}

// BenchmarkSlowMaster is BenchmarkAcquireRelease on new keys with one of
// the five masters answering 20 ms late, through a delaying proxy.
func BenchmarkSlowMaster(b *testing.B) {
	cl := startTestbed(b)
	for _, c := range contenders(b, cl.slow, coreNames()) {
		warmUp(b, c, "warm:"+c.Name)
		b.Run("lib="+c.Name, func(b *testing.B) {
			benchSequential(b, c, DistinctKeys("bench:slow:"+c.Name, 1<<16))
		})
	}
}

// BenchmarkParallel runs 64 goroutines, each taking and releasing new keys,
// on five healthy masters (net=local) and on five masters 250 µs away
// (net=lan); an op is one acquire+release. Beside ns/op and allocs/op (of
// the whole process, the harness included), it reports the costs per op
// that the report's tables show.
func BenchmarkParallel(b *testing.B) {
	cl := startTestbed(b)
	meter, err := NewMeter(cl.addrs)
	require.NoError(b, err)
	defer meter.Close()
	for _, net := range []struct {
		name  string
		addrs []string
		names []string
	}{{"local", cl.addrs, allNames()}, {"lan", cl.lan, coreNames()}} {
		for _, c := range contenders(b, net.addrs, net.names) {
			warmUp(b, c, "warm:"+net.name+":"+c.Name)
			runs := 0
			b.Run("net="+net.name+"/lib="+c.Name, func(b *testing.B) {
				runs++
				benchParallel(b, meter, c, fmt.Sprintf("bench:par:%s:%s:%d", net.name, c.Name, runs))
			})
		}
	}
}

// BenchmarkScale is BenchmarkParallel's local run on three standalone
// masters (topology=masters) and on three Redis Clusters of three shards
// each (topology=clusters), with the scale run's contenders; the masters'
// CPU is summed over the three or nine master processes.
func BenchmarkScale(b *testing.B) {
	for _, topo := range startTopologies(b) {
		meter, err := NewMeter(topo.masters)
		require.NoError(b, err)
		b.Cleanup(func() { meter.Close() })
		for _, c := range scaleContenders(b, topo) {
			warmUp(b, c, "warm:"+topo.name+":"+c.Name)
			runs := 0
			b.Run("topology="+topo.name+"/lib="+c.Name, func(b *testing.B) {
				runs++
				benchParallel(b, meter, c, fmt.Sprintf("bench:scale:%s:%s:%d", topo.name, c.Name, runs))
			})
		}
	}
}

// benchParallel runs 64 goroutines of c for b.N operations in all, and
// reports the costs per op that the report's tables show.
func benchParallel(b *testing.B, meter *Meter, c namedLocker, prefix string) {
	b.ReportAllocs()
	before, err := meter.Read()
	require.NoError(b, err)
	sent := c.Sent.Load()
	b.ResetTimer()
	r, err := RunParallel(context.Background(), c, prefix, parGoroutines, b.N, 10*time.Minute)
	b.StopTimer()
	require.NoError(b, err)
	after, err := meter.Read()
	require.NoError(b, err)
	d, n := after.Sub(before), float64(max(r.Ops, 1))
	settle()
	b.ReportMetric(r.OpsPerSec(), "locks/s")
	b.ReportMetric(float64(r.Errors)/n, "failed/op")
	b.ReportMetric(millis(r.Latency.Quantile(0.5)), "p50-ms")
	b.ReportMetric(micros(d.ClientCPU)/n, "client-cpu-µs/op")
	b.ReportMetric(d.Syscalls/n, "syscalls/op")
	b.ReportMetric(micros(d.MastersCPU)/n, "masters-cpu-µs/op")
	b.ReportMetric(micros(d.BusiestMaster())/n, "busiest-master-cpu-µs/op")
	b.ReportMetric(float64(c.Sent.Load()-sent)/n, "commands/op")
	b.ReportMetric(float64(d.Connections)/n, "dials/op")
}

func benchSequential(b *testing.B, l Locker, keys Keys) {
	ctx := context.Background()
	h := new(histogram.Histogram)
	n, errs := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if err := AcquireRelease(ctx, l, keys.At(n)); err != nil {
			errs++
		}
		h.Record(time.Since(t0))
		n++
	}
	b.ReportMetric(micros(h.Quantile(0.5)), "p50-µs")
	b.ReportMetric(micros(h.Quantile(0.99)), "p99-µs")
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64(errs)/float64(max(n, 1)), "errors/op")
}

// BenchmarkContention runs 8 goroutines contending for one key with no
// hold time; an op is one critical section.
func BenchmarkContention(b *testing.B) {
	cl := startTestbed(b)
	o := NewObserver("", time.Now(), libScripts(b).acquire)
	for _, v := range contentionVariants(b, cl.addrs, o) {
		runs := 0
		b.Run("lib="+v.name, func(b *testing.B) {
			runs++
			key := fmt.Sprintf("bench:contend:%s:%d", v.name, runs)
			base := time.Now()
			o.Reset(key, base)
			b.ReportAllocs()
			b.ResetTimer()
			r, err := RunContention(context.Background(), ContentionConfig{
				Key: key, Waiters: v.waiters, Duration: 2 * time.Minute, MaxLocks: b.N,
				Quorum: quorum, Observer: o, Base: base,
			})
			b.StopTimer()
			require.NoError(b, err)
			require.Zero(b, r.Overlaps, "mutual exclusion broken")
			b.ReportMetric(r.Throughput(), "locks/s")
			b.ReportMetric(micros(r.Handoff.Quantile(0.5)), "handoff-p50-µs")
			b.ReportMetric(millis(r.MaxWait), "max-wait-ms")
			b.ReportMetric(100*r.MaxShare(), "max-share-%")
			b.ReportMetric(float64(r.Attempts)/float64(max(r.Locks, 1)), "attempts/lock")
			b.ReportMetric(float64(r.Splits)/float64(max(r.Locks, 1)), "splits/lock")
		})
	}
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
