package workload

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/fencing/sqltest"
	"github.com/quorumlock/quorumlock/redlock"
)

func TestMain(m *testing.M) {
	if IsChild() { // a waiter process of TestProcs
		os.Exit(ChildMain())
	}
	goleak.VerifyTestMain(m)
}

// store returns a guarded or unguarded fenced store on a new SQLite
// database.
func store(t *testing.T, h *history.History, guarded bool) *Fenced {
	t.Helper()
	d := sqltest.SQLite(t)
	newStore := NewUnguarded
	if guarded {
		newStore = NewFenced
	}
	f, err := newStore(context.Background(), h, d.DB, d.Dialect)
	require.NoError(t, err)
	return f
}

func TestFenced_AcceptsOnlyTheHighestFence(t *testing.T) {
	fences := []int64{3, 3, 5, 4, 5, 1, 6}
	tests := []struct {
		guarded bool
		want    []bool
	}{
		{guarded: true, want: []bool{true, true, true, false, true, false, true}},
		{guarded: false, want: []bool{true, true, true, true, true, true, true}}, // C3's negative control
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("guarded=%v", tt.guarded), func(t *testing.T) {
			h := history.New()
			f := store(t, h, tt.guarded)
			assert.Equal(t, tt.guarded, f.Guarded())
			var accepted []history.Write
			for i, fence := range fences {
				assert.Equal(t, tt.want[i], f.Write("r", i, 0, fence), "write %d with fence %d", i, fence)
				if tt.want[i] {
					accepted = append(accepted, history.Write{Key: "r", Hold: i, Fence: fence, Accepted: true})
				}
			}
			assert.Empty(t, f.Errs())
			ws := h.Snapshot().Writes
			require.Len(t, ws, len(fences))
			for i, w := range ws {
				assert.Equal(t, i, w.Seq)
				assert.Equal(t, tt.want[i], w.Accepted)
			}
			committed, err := f.Committed(context.Background())
			require.NoError(t, err)
			assert.Equal(t, accepted, committed, "the database's log holds exactly the accepted writes")
		})
	}
}

// TestFenced_ConcurrentWritesRecordedInTheDatabasesOrder has writers with
// interleaved fences write at once: the history must list the accepted
// writes in the order the database committed them, with fences that only
// grow, so that C3 replays what the database decided.
func TestFenced_ConcurrentWritesRecordedInTheDatabasesOrder(t *testing.T) {
	const writers, each = 8, 20
	h := history.New()
	f := store(t, h, true)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				f.Write("r", w*each+k, w, int64(k*writers+w+1))
			}
		}()
	}
	wg.Wait()
	assert.Empty(t, f.Errs())
	var accepted []history.Write
	rejected := 0
	for _, w := range h.Snapshot().Writes {
		if !w.Accepted {
			rejected++
			continue
		}
		accepted = append(accepted, history.Write{Key: w.Key, Hold: w.Hold, Client: w.Client, Fence: w.Fence, Accepted: true})
	}
	committed, err := f.Committed(context.Background())
	require.NoError(t, err)
	assert.Equal(t, committed, accepted)
	for i := 1; i < len(accepted); i++ {
		assert.GreaterOrEqual(t, accepted[i].Fence, accepted[i-1].Fence)
	}
	assert.Equal(t, writers*each, len(accepted)+rejected)
	assert.Positive(t, rejected, "the writers did not interleave")
}

// TestFenced_ResourcesAreFencedApart writes to two resources: each has
// fences of its own.
func TestFenced_ResourcesAreFencedApart(t *testing.T) {
	h := history.New()
	f := store(t, h, true)
	assert.True(t, f.Write("a", 0, 0, 7))
	assert.True(t, f.Write("b", 1, 1, 3), "b has seen no fence yet")
	assert.False(t, f.Write("a", 2, 0, 5), "a has seen 7")
	assert.True(t, f.Write("b", 3, 1, 4))
	committed, err := f.Committed(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []history.Write{
		{Key: "a", Hold: 0, Client: 0, Fence: 7, Accepted: true},
		{Key: "b", Hold: 1, Client: 1, Fence: 3, Accepted: true},
		{Key: "b", Hold: 3, Client: 1, Fence: 4, Accepted: true},
	}, committed)
}

func TestSet_ReadModifyWriteWithoutLockLosesAnElement(t *testing.T) {
	var s Set
	a, b := s.Read("k"), s.Read("k") // two clients read at once
	s.Write("k", append(a, 1))
	s.Write("k", append(b, 2))
	assert.Equal(t, []int64{2}, s.Read("k"))
	assert.Equal(t, []int64{2}, s.All())
}

func TestSet_EachKeyHasItsOwnSet(t *testing.T) {
	var s Set
	a, b := s.Read("a"), s.Read("b") // holders of two keys at once
	s.Write("a", append(a, 1))
	s.Write("b", append(b, 2))
	assert.Equal(t, []int64{1}, s.Read("a"))
	assert.Equal(t, []int64{2}, s.Read("b"))
	assert.Equal(t, []int64{1, 2}, s.All())
}

func TestGate_FreezesTheMatchingHolderUntilResumed(t *testing.T) {
	var g Gate
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// A holder that does not match passes at once.
	assert.False(t, g.point(ctx, history.Hold{Client: 1}, time.Second))

	passed := make(chan bool, 2)
	go func() { passed <- g.point(ctx, history.Hold{Client: 1}, 5*time.Second) }()
	go func() { passed <- g.point(ctx, history.Hold{Client: 2}, 5*time.Second) }()
	c, err := g.Catch(ctx, func(h history.Hold) bool { return h.Client == 2 })
	require.NoError(t, err)
	assert.Equal(t, 2, c.Hold.Client)
	assert.False(t, <-passed, "client 1 is not caught")
	select {
	case <-passed:
		t.Fatal("the caught holder went on before Resume")
	case <-time.After(50 * time.Millisecond):
	}
	c.Resume()
	c.Resume() // idempotent
	assert.True(t, <-passed)
}

func TestGate_CatchGivesUpWhenCtxEnds(t *testing.T) {
	var g Gate
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := g.Catch(ctx, func(history.Hold) bool { return true })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	// The catch is withdrawn: a holder now passes.
	assert.False(t, g.point(context.Background(), history.Hold{}, time.Second))
}

func TestGate_BoundFreesAForgottenHolder(t *testing.T) {
	var g Gate
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan bool, 1)
	go func() { done <- g.point(ctx, history.Hold{}, 30*time.Millisecond) }()
	_, err := g.Catch(ctx, func(history.Hold) bool { return true })
	require.NoError(t, err)
	assert.True(t, <-done)
}

func TestValve_HoldOffWaitsForOperationsInFlight(t *testing.T) {
	var v valve
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.True(t, v.enter(ctx))
	closed := make(chan error, 1)
	go func() { closed <- v.close(ctx) }()
	select {
	case <-closed:
		t.Fatal("HoldOff returned with an operation in flight")
	case <-time.After(30 * time.Millisecond):
	}
	v.leave()
	require.NoError(t, <-closed)

	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	assert.False(t, v.enter(short), "no new operation while held off")
	assert.ErrorIs(t, v.close(ctx), errShut)
	v.open()
	assert.True(t, v.enter(ctx))
	v.leave()
}

func TestConfig_ValidateTheModes(t *testing.T) {
	base := func() Config {
		return Config{Keys: []string{"k"}, TTL: time.Second, Clients: make([]*redlock.Client, 1), History: history.New(), Set: &Set{}, Store: &Fenced{},
			Gate: &Gate{}, MaxOps: 1, Backoff: time.Millisecond, CatchBound: time.Second}
	}
	fence := func(context.Context, string) (int64, []int, bool) { return 0, nil, false }
	tests := []struct {
		name string
		edit func(c *Config)
		ok   bool
	}{
		{"TryLock", func(c *Config) {}, true},
		{"Lock without a wait bound", func(c *Config) { c.Mode = LockMode }, false},
		{"Lock with goroutines", func(c *Config) { c.Mode, c.Wait, c.Workers = LockMode, time.Second, 3 }, true},
		{"TryLock with goroutines", func(c *Config) { c.Workers = 2 }, false},
		{"Do without FenceOf", func(c *Config) {
			c.Mode, c.Wait, c.HoldFor, c.Step = DoMode, time.Second, time.Second, time.Millisecond
		}, false},
		{"Do", func(c *Config) {
			c.Mode, c.Wait, c.HoldFor, c.Step, c.FenceOf = DoMode, time.Second, time.Second, time.Millisecond, fence
		}, true},
		{"Do with goroutines", func(c *Config) {
			c.Mode, c.Wait, c.HoldFor, c.Step, c.FenceOf, c.Workers = DoMode, time.Second, time.Second, time.Millisecond, fence, 2
		}, false},
		{"TryLock on several keys", func(c *Config) { c.Keys = []string{"a", "b", "c"} }, true},
		{"no key", func(c *Config) { c.Keys = nil }, false},
		{"an empty key", func(c *Config) { c.Keys = []string{"a", ""} }, false},
		{"a key twice", func(c *Config) { c.Keys = []string{"a", "b", "a"} }, false},
		{"Do on several keys", func(c *Config) {
			c.Mode, c.Wait, c.HoldFor, c.Step, c.FenceOf, c.Keys = DoMode, time.Second, time.Second, time.Millisecond, fence, []string{"a", "b"}
		}, false},
	}
	for _, tt := range tests {
		c := base()
		tt.edit(&c)
		_, err := New(c)
		assert.Equal(t, tt.ok, err == nil, "%s: %v", tt.name, err)
	}
}
