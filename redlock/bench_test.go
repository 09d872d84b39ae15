package redlock

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// benchClient returns a client over five fresh masters.
func benchClient(b *testing.B) *Client {
	b.Helper()
	srv := redistest.Start(b, 5, redistest.Ephemeral)
	c, err := NewFromAddrs(redistest.Addrs(srv), WithRestartGuard(0), WithLogger(quiet()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	// Warm the pools and the script caches.
	l, err := c.TryLock(context.Background(), "warm", time.Second)
	if err != nil {
		b.Fatal(err)
	}
	l.Release(context.Background())
	return c
}

// BenchmarkTryLockRelease is one client taking and releasing a free key on
// five local masters: two parallel round trips to the fastest majority.
func BenchmarkTryLockRelease(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	key, failed := "bench", 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l, err := c.TryLock(ctx, key, 10*time.Second)
		if err == nil {
			err = l.Release(ctx)
		}
		if err != nil {
			// A stall of the machine longer than the node timeout; the key
			// may still be held somewhere, so go on with another.
			failed++
			key = fmt.Sprintf("bench-%d", failed)
		}
	}
	b.ReportMetric(float64(failed), "failures")
	if failed > b.N/100 {
		b.Errorf("%d of %d operations failed", failed, b.N)
	}
}

// BenchmarkTryLockRelease_Parallel takes distinct keys from GOMAXPROCS goroutines.
func BenchmarkTryLockRelease_Parallel(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Sprintf("bench-%d", next.Add(1))
		for pb.Next() {
			l, err := c.TryLock(ctx, key, 10*time.Second)
			if err != nil {
				b.Error(err)
				return
			}
			l.Release(ctx)
		}
	})
}

// BenchmarkLock_Contended has eight goroutines of one client take one key in
// turn, with an empty critical section.
func BenchmarkLock_Contended(b *testing.B) {
	c := benchClient(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.ReportAllocs()
	b.SetParallelism(4) // 8 goroutines on 2 CPUs
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l, err := c.Lock(ctx, "contended", 10*time.Second)
			if err != nil {
				b.Error(err)
				return
			}
			l.Release(ctx)
		}
	})
}
