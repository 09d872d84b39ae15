package check

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quorumlock/quorumlock/chaos/history"
)

func TestFenced(t *testing.T) {
	holds := []history.Hold{
		{ID: 0, Client: 0, Key: "a", Acquired: 0, Fence: 1},
		{ID: 1, Client: 1, Key: "a", Acquired: 100 * ms, Fence: 2},
		{ID: 2, Client: 2, Key: "a", Acquired: 200 * ms, Fence: 2}, // a broken lock handed out fence 2 twice
		// Another key, a resource of its own with fences of its own.
		{ID: 3, Client: 2, Key: "b", Acquired: 50 * ms, Fence: 1},
		{ID: 4, Client: 0, Key: "b", Acquired: 300 * ms, Fence: 2},
	}
	w := func(seq, hold int, accepted bool) history.Write {
		return history.Write{Seq: seq, Hold: hold, Client: holds[hold].Client, Fence: holds[hold].Fence, Accepted: accepted}
	}
	tests := []struct {
		name     string
		writes   []history.Write
		rejected int
		stale    []int // Seq of the stale accepted writes
	}{
		{name: "no writes"},
		{name: "holders write in turn", writes: []history.Write{w(0, 0, true), w(1, 1, true)}},
		{name: "a holder writes several times", writes: []history.Write{w(0, 0, true), w(1, 0, true), w(2, 1, true), w(3, 1, true)}},
		{name: "the store rejects the stale writer", writes: []history.Write{w(0, 0, true), w(1, 1, true), w(2, 0, false)}, rejected: 1},
		{
			name:   "a store that accepted the superseded holder",
			writes: []history.Write{w(0, 0, true), w(1, 1, true), w(2, 0, true)},
			stale:  []int{2},
		},
		{
			name:   "two holders with one fence: the older one's late write gets through",
			writes: []history.Write{w(0, 1, true), w(1, 2, true), w(2, 1, true)},
			stale:  []int{2},
		},
		{
			name:   "a key's holder writes after a later holder of another key",
			writes: []history.Write{w(0, 0, true), w(1, 1, true), w(2, 3, true), w(3, 1, true)},
		},
		{
			name:   "a superseded holder of one key among the writes of another",
			writes: []history.Write{w(0, 3, true), w(1, 0, true), w(2, 4, true), w(3, 1, true), w(4, 3, true)},
			stale:  []int{4},
		},
		{
			name:   "seq order wins over the order of the slice",
			writes: []history.Write{w(2, 0, true), w(0, 0, true), w(1, 1, true)},
			stale:  []int{2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Fenced(holds, tt.writes)
			assert.Equal(t, len(tt.writes), f.Writes)
			assert.Equal(t, tt.rejected, f.Rejected)
			assert.Equal(t, len(tt.writes)-tt.rejected, f.Accepted)
			var stale []int
			for _, s := range f.Stale {
				stale = append(stale, s.Seq)
			}
			assert.Equal(t, tt.stale, stale)
		})
	}
}
