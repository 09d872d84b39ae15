package rueidisdriver_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo"
	rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// masterCPU returns the CPU time the servers have used, user and system.
func masterCPU(b *testing.B, srv []*redistest.Server) time.Duration {
	b.Helper()
	var total float64
	for _, s := range srv {
		info, err := s.Info("cpu")
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range []string{"used_cpu_user", "used_cpu_sys"} {
			v, err := strconv.ParseFloat(info[f], 64)
			if err != nil {
				b.Fatalf("INFO cpu %s: %v", f, err)
			}
			total += v
		}
	}
	return time.Duration(total * float64(time.Second))
}

// drivers are the contenders: the default redigo driver, and this one.
var drivers = []struct {
	name string
	new  func(b *testing.B, addr string) driver.Master
}{
	{"redigo", func(b *testing.B, addr string) driver.Master {
		p, err := redigo.New(addr)
		if err != nil {
			b.Fatal(err)
		}
		return p
	}},
	{"rueidis", func(b *testing.B, addr string) driver.Master {
		m, err := rueidisdriver.New(standalone(b, addr))
		if err != nil {
			b.Fatal(err)
		}
		return m
	}},
}

// BenchmarkTryLockRelease takes and releases distinct keys from 64
// goroutines on three local masters, with the restart guard's health read
// as each driver sends it, and reports the masters' CPU time per lock.
func BenchmarkTryLockRelease(b *testing.B) {
	for _, d := range drivers {
		b.Run(d.name, func(b *testing.B) {
			srv := redistest.Start(b, 3, redistest.Ephemeral)
			ds := make([]driver.Master, len(srv))
			for i, s := range srv {
				ds[i] = d.new(b, s.Addr())
			}
			c, err := redlock.New(ds, redlock.WithCloseDrivers(), redlock.WithRestartGuard(0), redlock.WithNodeTimeout(time.Second), redlock.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			var next, failed atomic.Int64
			cpu := masterCPU(b, srv)
			b.SetParallelism(32) // 64 goroutines on 2 CPUs
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				key := fmt.Sprintf("bench-%d", next.Add(1))
				for pb.Next() {
					l, err := c.TryLock(ctx, key, 10*time.Second)
					if err == nil {
						err = l.Release(ctx)
					}
					if err != nil {
						// A stall of the machine beyond the node timeout:
						// go on with another key.
						key = fmt.Sprintf("bench-%d", next.Add(1))
						failed.Add(1)
					}
				}
			})
			b.StopTimer()
			used := masterCPU(b, srv) - cpu
			b.ReportMetric(float64(used.Microseconds())/float64(b.N), "master-µs/lock")
			b.ReportMetric(float64(failed.Load()), "failures")
		})
	}
}

// BenchmarkEval runs one small script with and without the guard's
// questions, to show what asking on every call costs: the driver's
// round trip, and the master's CPU time per call.
func BenchmarkEval(b *testing.B) {
	script := driver.NewScript("set", `return redis.call('SET', KEYS[1], ARGV[1], 'PX', 10000)`)
	questions := [][]string{{"INFO", "server"}, {"INFO", "replication"}, {"INFO", "memory"}, {"CONFIG", "GET", "append*"}, {"GET", "stamp"}}
	for _, d := range drivers {
		for _, ask := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/questions=%v", d.name, ask), func(b *testing.B) {
				srv := redistest.Start(b, 1, redistest.Ephemeral)
				m := d.new(b, srv[0].Addr())
				defer m.Close()
				call := driver.Call{Script: script, Keys: []string{"k"}, Args: []string{"v"}}
				if ask {
					check := &driver.Check{Questions: questions, Always: true}
					call.Check = func(string) *driver.Check { return check }
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // Start needs a deadline
				defer cancel()
				cpu := masterCPU(b, srv)
				b.SetParallelism(32)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := driver.Eval(ctx, m, call); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				used := masterCPU(b, srv) - cpu
				b.ReportMetric(float64(used.Microseconds())/float64(b.N), "master-µs/op")
			})
		}
	}
}
