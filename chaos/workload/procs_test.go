package workload

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// TestProcs runs three waiter processes (this test binary again) on three
// masters, kills one while it waits and starts it again: the history has
// holds one after the other, each with its write, the killed call cut at
// the kill, and the kill as a fault that ended at the new start.
func TestProcs(t *testing.T) {
	masters := redistest.Addrs(redistest.Start(t, 3, redistest.Ephemeral))
	exe, err := os.Executable()
	require.NoError(t, err)
	h := history.New()
	set := &Set{}
	p, err := NewProcs(ProcsConfig{
		Exe: exe, Clients: 3, Addrs: func(int) []string { return masters }, Masters: masters,
		Key: "procs", TTL: time.Second, NodeTimeout: 100 * time.Millisecond,
		Wait: 10 * time.Second, Pause: 5 * time.Millisecond, Backoff: 30 * time.Millisecond,
		History: h, Set: set, Store: store(t, h, true),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		p.Run(rctx)
	}()
	defer func() { stop(); <-ran }()

	// Wait for a few locks, then for a waiter to kill.
	require.NoError(t, h.Await(ctx, func(r *history.Record) bool { return len(r.Holds) >= 10 }))
	var victim Waiter
	require.Eventually(t, func() bool {
		ws := p.Waiting()
		if len(ws) == 0 {
			return false
		}
		victim = ws[0]
		return true
	}, 5*time.Second, time.Millisecond)
	k, err := p.Kill(ctx, victim.Client)
	require.NoError(t, err)
	assert.Equal(t, victim.Client, k.Client)
	_, err = p.Kill(ctx, victim.Client)
	require.Error(t, err, "a dead process cannot be killed again")
	require.NoError(t, p.Start(victim.Client))
	require.Error(t, p.Start(victim.Client), "the client runs again")
	// The new process takes the lock too.
	require.NoError(t, h.Await(ctx, func(r *history.Record) bool {
		for _, x := range r.Holds {
			if x.Client == victim.Client && x.Acquired > k.At {
				return true
			}
		}
		return false
	}))
	stop()
	<-ran
	assert.Empty(t, p.Problems())

	rec := h.Snapshot()
	var killed []history.Attempt
	for _, a := range rec.Attempts {
		if a.Killed {
			killed = append(killed, a)
		}
	}
	if k.Waiting {
		require.Len(t, killed, 1)
		assert.Equal(t, k.At, killed[0].End)
		assert.True(t, errors.Is(killed[0].Err, ErrKilled))
	} else { // it got the lock between Waiting and the kill
		assert.Empty(t, killed)
	}
	var faults []history.Fault
	for _, f := range rec.Faults {
		if f.Kind == "client killed" {
			faults = append(faults, f)
		}
	}
	require.Len(t, faults, 1)
	assert.Equal(t, victim.Client, faults[0].Client)
	assert.False(t, faults[0].Open(), "ended by the new start")

	// The holds follow one another, and every one that wrote was acked.
	acked := map[int64]bool{}
	for _, e := range rec.Acked {
		acked[e] = true
	}
	var last time.Duration
	for _, x := range rec.Holds {
		assert.GreaterOrEqual(t, x.Acquired, last, "hold %d overlaps the one before", x.ID)
		last = x.End()
		if x.Element > 0 {
			assert.True(t, acked[x.Element])
		}
		assert.Less(t, x.Acquired, x.Until)
	}
	assert.Len(t, set.All(), len(rec.Acked), "no write lost")
	// The end of the run cancelled the calls under way.
	var cancelled int
	for _, a := range rec.Attempts {
		if errors.Is(a.Err, context.Canceled) {
			cancelled++
		}
	}
	assert.Positive(t, cancelled)
	assert.Positive(t, len(rec.Tokens))
}
