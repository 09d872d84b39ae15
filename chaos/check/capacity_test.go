package check

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quorumlock/quorumlock/chaos/history"
)

func TestCapacity(t *testing.T) {
	tests := []struct {
		name    string
		permits int
		holds   []history.Hold
		at      [][]int // for each excess, the IDs of the holds open then
	}{
		{name: "no holds", permits: 2},
		{
			name:    "two permits held at once are within two",
			permits: 2,
			holds:   []history.Hold{hold(0, 0, 0, 100*ms, 50*ms), hold(1, 1, 10*ms, 110*ms, 60*ms)},
		},
		{
			name:    "a third while two are held is one too many",
			permits: 2,
			holds:   []history.Hold{hold(0, 0, 0, 100*ms, 50*ms), hold(1, 1, 10*ms, 110*ms, 60*ms), hold(2, 2, 20*ms, 120*ms, 70*ms)},
			at:      [][]int{{0, 1, 2}},
		},
		{
			name:    "a third once the first ended is within two",
			permits: 2,
			holds:   []history.Hold{hold(0, 0, 0, 100*ms, 15*ms), hold(1, 1, 10*ms, 110*ms, 60*ms), hold(2, 2, 20*ms, 120*ms, 70*ms)},
		},
		{
			name:    "a third when the first ends exactly then is within two",
			permits: 2,
			holds:   []history.Hold{hold(0, 0, 0, 100*ms, 20*ms), hold(1, 1, 10*ms, 110*ms, 60*ms), hold(2, 2, 20*ms, 120*ms, 70*ms)},
		},
		{
			name:    "a permit never released stays open until its validity ends",
			permits: 1,
			holds:   []history.Hold{hold(0, 0, 0, 100*ms, 0), hold(1, 1, 99*ms, 200*ms, 150*ms)},
			at:      [][]int{{0, 1}},
		},
		{
			name:    "each acquisition beyond the permits is one excess",
			permits: 1,
			holds:   []history.Hold{hold(0, 0, 0, 100*ms, 90*ms), hold(1, 1, 10*ms, 110*ms, 80*ms), hold(2, 2, 20*ms, 120*ms, 70*ms)},
			at:      [][]int{{0, 1}, {0, 1, 2}},
		},
		{
			name:    "different keys are counted apart",
			permits: 1,
			holds: []history.Hold{
				{ID: 0, Key: "a", Acquired: 0, Until: 100 * ms},
				{ID: 1, Key: "b", Acquired: 10 * ms, Until: 110 * ms},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [][]int
			for _, e := range Capacity(tt.holds, tt.permits) {
				var ids []int
				for _, h := range e.Holds {
					ids = append(ids, h.ID)
				}
				got = append(got, ids)
			}
			assert.Equal(t, tt.at, got)
		})
	}
}

// With one permit, Capacity fires on every history Exclusion fires on, and
// only there.
func TestCapacity_OnePermitAgreesWithExclusion(t *testing.T) {
	histories := [][]history.Hold{
		{hold(0, 0, 0, 100*ms, 10*ms), hold(1, 1, 11*ms, 111*ms, 20*ms)},
		{hold(0, 0, 0, 100*ms, 50*ms), hold(1, 1, 20*ms, 120*ms, 30*ms)},
		{hold(0, 0, 0, 100*ms, 300*ms), hold(1, 1, 101*ms, 200*ms, 150*ms)},
		{hold(0, 0, 0, 100*ms, 0), hold(1, 1, 99*ms, 200*ms, 150*ms)},
	}
	for i, hs := range histories {
		assert.Equal(t, len(Exclusion(hs)) > 0, len(Capacity(hs, 1)) > 0, "history %d", i)
	}
}
