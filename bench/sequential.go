package bench

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/quorumlock/quorumlock/internal/histogram"
)

// Keys names the key of the i-th operation of a sequential run.
type Keys struct {
	keys []string
}

// SameKey uses key for every operation.
func SameKey(key string) Keys { return Keys{keys: []string{key}} }

// DistinctKeys makes n keys "prefix:0" … "prefix:n-1" up front, so that
// naming a key costs nothing while measuring, and cycles through them. A key
// comes round again only after n operations, long after its release.
func DistinctKeys(prefix string, n int) Keys {
	n = max(n, 1)
	k := Keys{keys: make([]string, n)}
	for i := range n {
		k.keys[i] = prefix + ":" + strconv.Itoa(i)
	}
	return k
}

// At returns the key of operation i.
func (k Keys) At(i int) string {
	if len(k.keys) == 0 {
		return "bench:key"
	}
	return k.keys[i%len(k.keys)]
}

// AcquireRelease takes key with one attempt and releases it: the unit the
// sequential scenarios time.
func AcquireRelease(ctx context.Context, l Locker, key string) error {
	h, err := l.TryLock(ctx, key)
	if err != nil {
		return err
	}
	return h.Release(ctx)
}

// SeqResult is what a sequential run measured.
type SeqResult struct {
	Latency  histogram.Histogram // every acquire+release, failed ones included
	Ops      int
	Errors   int
	FirstErr error
	Elapsed  time.Duration
}

// OpsPerSec returns operations per second of wall time.
func (r *SeqResult) OpsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// RunSequential runs acquire+release one after another, on one goroutine,
// until maxOps operations or maxTime have passed, whichever comes first, or
// ctx is done.
func RunSequential(ctx context.Context, l Locker, keys Keys, maxOps int, maxTime time.Duration) (*SeqResult, error) {
	if l == nil {
		return nil, errors.New("bench: nil locker")
	}
	if maxOps <= 0 || maxTime <= 0 {
		return nil, errors.New("bench: a sequential run needs positive bounds")
	}
	r := &SeqResult{}
	start := time.Now()
	for i := 0; i < maxOps; i++ {
		if ctx.Err() != nil || time.Since(start) >= maxTime {
			break
		}
		t0 := time.Now()
		err := AcquireRelease(ctx, l, keys.At(i))
		r.Latency.Record(time.Since(t0))
		r.Ops++
		if err != nil {
			r.Errors++
			if r.FirstErr == nil {
				r.FirstErr = err
			}
		}
	}
	r.Elapsed = time.Since(start)
	return r, nil
}
