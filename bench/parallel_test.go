package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every operation of a parallel run is counted once, within the bound on
// operations, for every contender.
func TestRunParallel_CountsEveryOperation(t *testing.T) {
	cl := startTestbed(t)
	for _, c := range contenders(t, cl.addrs, allNames()) {
		t.Run(c.Name, func(t *testing.T) {
			warmUp(t, c, "warm:"+c.Name)
			r, err := RunParallel(context.Background(), c, "par:"+c.Name, 16, 400, 30*time.Second)
			require.NoError(t, err)
			assert.Equal(t, 400, r.Ops, "the bound on operations")
			assert.Equal(t, 400, r.Latency.Count())
			// A loaded machine misses some 50 ms node timeouts; most succeed.
			assert.Less(t, r.Errors, 100, "%v", r.FirstErr)
			assert.Positive(t, r.OpsPerSec())
		})
	}
}

// keyLog is a Locker that notes the keys it is asked for.
type keyLog struct {
	Locker
	mu           sync.Mutex
	taken, inUse map[string]int
	collisions   int
}

func (k *keyLog) TryLock(ctx context.Context, key string) (Held, error) {
	k.mu.Lock()
	k.taken[key]++
	k.inUse[key]++
	if k.inUse[key] > 1 {
		k.collisions++
	}
	k.mu.Unlock()
	h, err := k.Locker.TryLock(ctx, key)
	k.mu.Lock()
	k.inUse[key]--
	k.mu.Unlock()
	return h, err
}

// Each goroutine keeps to keys of its own, and no key comes round twice in
// a run shorter than the keys each goroutine has.
func TestRunParallel_GoroutinesKeepToKeysOfTheirOwn(t *testing.T) {
	cl := startTestbed(t)
	l := &keyLog{Locker: newPipelinedFloor(t, cl.addrs), taken: map[string]int{}, inUse: map[string]int{}}
	r, err := RunParallel(context.Background(), l, "own", 16, 800, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 800, r.Ops)
	assert.Zero(t, l.collisions, "two goroutines asked for one key at once")
	assert.Len(t, l.taken, 800, "a key was asked for twice")
}

// A key held elsewhere fails every attempt on it, and each failure counts;
// the time bound ends a run that the operation bound would not.
func TestRunParallel_FailuresCountAndTimeBounds(t *testing.T) {
	cl := startTestbed(t)
	f := newPipelinedFloor(t, cl.addrs)
	warmUp(t, f, "warm")
	keys := DistinctKeys("held:0", keysPerGoroutine) // the keys of the run's one goroutine
	for i := 1; i < 40; i += 2 {
		for _, a := range cl.addrs[:quorum] {
			do(t, a, "SET", keys.At(i), "foreign", "PX", 60000)
		}
	}
	r, err := RunParallel(context.Background(), f, "held", 1, 40, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 40, r.Ops)
	assert.Equal(t, 20, r.Errors, "every other key is held by a majority")
	assert.ErrorIs(t, r.FirstErr, ErrFloorNotObtained)

	begin := time.Now()
	r, err = RunParallel(context.Background(), f, "timed", 4, 1<<30, 200*time.Millisecond)
	require.NoError(t, err)
	assert.Less(t, time.Since(begin), 5*time.Second)
	assert.Less(t, r.Ops, 1<<30)
}

func TestRunParallel_BadInput_IsAnError(t *testing.T) {
	ctx := context.Background()
	_, err := RunParallel(ctx, nil, "k", 1, 1, time.Second)
	assert.Error(t, err)
	for _, bad := range [][2]int{{0, 1}, {1, 0}} {
		_, err = RunParallel(ctx, &Floor{}, "k", bad[0], bad[1], time.Second)
		assert.Error(t, err)
	}
	_, err = RunParallel(ctx, &Floor{}, "k", 1, 1, 0)
	assert.Error(t, err)
}
