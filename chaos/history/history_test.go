package history

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFailedTokens_AreTheTokensThatNeverBecameHolds(t *testing.T) {
	h := New()
	h.Token(0, "won")
	h.Token(0, "lost")
	h.Token(1, "also-lost")
	assert.Equal(t, "lost", h.LastToken(0))
	h.Acquire(Hold{Client: 0, Token: "won"})
	rec := h.Snapshot()
	assert.Equal(t, map[string]bool{"lost": true, "also-lost": true}, rec.FailedTokens())
}

func TestFault_EndsOnceAndAfterItsStart(t *testing.T) {
	h := New()
	id := h.FaultStart(2, AllClients, "killed", "n2 killed")
	assert.True(t, h.Snapshot().Faults[id].Open())
	h.FaultEnd(id)
	first := h.Snapshot().Faults[id].End
	assert.Greater(t, first, h.Snapshot().Faults[id].Start)
	h.FaultEnd(id) // already closed: unchanged
	assert.Equal(t, first, h.Snapshot().Faults[id].End)
	h.Instant(0, "clock jump", "n0 clock +4s")
	f := h.Snapshot().Faults[1]
	assert.Equal(t, f.Start, f.End)
	id = h.Span(3, AllClients, "dead token", "n3 blocked", 2*time.Second, 3*time.Second)
	f = h.Snapshot().Faults[id]
	assert.Equal(t, [2]time.Duration{2 * time.Second, 3 * time.Second}, [2]time.Duration{f.Start, f.End})
	assert.False(t, f.Open())
}

func TestAwait_WakesOnTheChangeThatSatisfiesIt(t *testing.T) {
	h := New()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- h.Await(ctx, func(r *Record) bool { return len(r.Holds) == 2 })
	}()
	h.Acquire(Hold{Client: 0})
	h.Acquire(Hold{Client: 1})
	require.NoError(t, <-done)

	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	err := h.Await(short, func(r *Record) bool { return len(r.Holds) == 3 })
	assert.True(t, errors.Is(err, context.DeadlineExceeded))
}

func TestHold_EndIsTheReleaseOrTheValidityWhicheverIsFirst(t *testing.T) {
	tests := []struct {
		name                    string
		until, released, wantAt time.Duration
	}{
		{"released in time", 100, 40, 40},
		{"released after its validity", 100, 150, 100},
		{"never released", 100, 0, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantAt, Hold{Until: tt.until, Released: tt.released}.End())
		})
	}
}
