package goredis_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/goredis"
	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// BenchmarkTryLockRelease compares the drivers on one run: one goroutine,
// then 64 (GOMAXPROCS × the parallelism), take and release distinct keys on
// three local masters, through the redigo pool and through go-redis
// clients, with ContextTimeoutEnabled or with go-redis's own timeouts. The
// guard is off: its questions go only with a new connection, which steady
// state does not open. The node timeout is 500 ms, so that a machine shared
// with other work measures cost rather than timeouts; failures/op counts
// those left.
func BenchmarkTryLockRelease(b *testing.B) {
	srv := redistest.Start(b, 3, redistest.Ephemeral)
	for _, goroutines := range []int{1, 64} {
		b.Run(fmt.Sprint("goroutines=", goroutines), func(b *testing.B) { benchDrivers(b, srv, goroutines) })
	}
}

func benchDrivers(b *testing.B, srv []*redistest.Server, goroutines int) {
	for _, d := range []struct {
		name string
		open func(b *testing.B, addr string) driver.Master
	}{
		{"redigo", func(b *testing.B, addr string) driver.Master {
			p, err := redigo.New(addr)
			if err != nil {
				b.Fatal(err)
			}
			return p
		}},
		{"goredis-ctx", func(b *testing.B, addr string) driver.Master {
			return goredisMaster(b, &redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: goroutines})
		}},
		{"goredis-timeouts", func(b *testing.B, addr string) driver.Master {
			return goredisMaster(b, &redis.Options{Addr: addr, PoolSize: goroutines})
		}},
	} {
		b.Run(d.name, func(b *testing.B) {
			ms := make([]driver.Master, len(srv))
			for i, s := range srv {
				ms[i] = d.open(b, s.Addr())
				b.Cleanup(func() { ms[i].Close() })
			}
			c, err := redlock.New(ms, redlock.WithRestartGuard(0), redlock.WithNodeTimeout(500*time.Millisecond),
				redlock.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			ctx := context.Background()
			var next, failed atomic.Int64
			b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				key := fmt.Sprint("bench-", next.Add(1))
				for pb.Next() {
					l, err := c.TryLock(ctx, key, 10*time.Second)
					if err == nil {
						err = l.Release(ctx)
					}
					if err != nil {
						// A stall longer than the node timeout; the key may be
						// held somewhere still: go on with another.
						failed.Add(1)
						key = fmt.Sprint("bench-", next.Add(1))
					}
				}
			})
			b.ReportMetric(float64(failed.Load())/float64(b.N), "failures/op")
		})
	}
}

func goredisMaster(b *testing.B, opt *redis.Options) driver.Master {
	client := redis.NewClient(opt)
	b.Cleanup(func() { client.Close() })
	m, err := goredis.New(client)
	if err != nil {
		b.Fatal(err)
	}
	return m
}
