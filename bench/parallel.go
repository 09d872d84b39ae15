package bench

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/internal/histogram"
)

// ParResult is what a parallel run measured.
type ParResult struct {
	Latency  histogram.Histogram // every acquire+release, failed ones included
	Ops      int                 // acquire+release attempts
	Errors   int                 // attempts that failed: not obtained, or not released
	FirstErr error
	Elapsed  time.Duration
}

// OpsPerSec returns operations per second of wall time.
func (r *ParResult) OpsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// keysPerGoroutine is how many keys each goroutine of a parallel run cycles
// through: a key comes round again long after its release.
const keysPerGoroutine = 1 << 11

// RunParallel runs goroutines goroutines, each taking and releasing keys of
// its own one after another (acquire with one attempt, then release), until
// maxOps operations in all, or maxTime, or ctx is done. The keys are named
// up front, so that naming them costs nothing while measuring.
func RunParallel(ctx context.Context, l Locker, prefix string, goroutines, maxOps int, maxTime time.Duration) (*ParResult, error) {
	switch {
	case l == nil:
		return nil, errors.New("bench: nil locker")
	case goroutines <= 0 || maxOps <= 0 || maxTime <= 0:
		return nil, errors.New("bench: a parallel run needs positive bounds")
	}
	keys := make([]Keys, goroutines)
	for g := range keys {
		keys[g] = DistinctKeys(prefix+":"+strconv.Itoa(g), keysPerGoroutine)
	}
	runCtx, cancel := context.WithTimeout(ctx, maxTime)
	defer cancel()
	var started atomic.Int64
	parts := make([]ParResult, goroutines)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range goroutines {
		r := &parts[g]
		wg.Go(func() {
			for i := 0; runCtx.Err() == nil && started.Add(1) <= int64(maxOps); i++ {
				t0 := time.Now()
				// The ctx of the whole run, not runCtx: an operation under way
				// when the run ends is finished, not cut short and counted failed.
				err := AcquireRelease(ctx, l, keys[g].At(i))
				r.Latency.Record(time.Since(t0))
				r.Ops++
				if err != nil {
					r.Errors++
					if r.FirstErr == nil {
						r.FirstErr = err
					}
				}
			}
		})
	}
	wg.Wait()
	out := &ParResult{Elapsed: time.Since(start)}
	for g := range parts {
		out.Latency.Merge(&parts[g].Latency)
		out.Ops += parts[g].Ops
		out.Errors += parts[g].Errors
		if out.FirstErr == nil {
			out.FirstErr = parts[g].FirstErr
		}
	}
	return out, nil
}
