package check

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quorumlock/quorumlock/chaos/history"
)

func hold(id, client int, acquired, until, released time.Duration) history.Hold {
	return history.Hold{ID: id, Client: client, Key: "k", Acquired: acquired, Until: until, Released: released}
}

const ms = time.Millisecond

func TestExclusion(t *testing.T) {
	tests := []struct {
		name  string
		holds []history.Hold
		pairs [][2]int // IDs of the violating pairs, first then second
	}{
		{name: "no holds"},
		{
			name:  "one after the other",
			holds: []history.Hold{hold(0, 0, 0, 100*ms, 10*ms), hold(1, 1, 11*ms, 111*ms, 20*ms)},
		},
		{
			name:  "second starts exactly when the first ends",
			holds: []history.Hold{hold(0, 0, 0, 100*ms, 10*ms), hold(1, 1, 10*ms, 110*ms, 20*ms)},
		},
		{
			name:  "double holder",
			holds: []history.Hold{hold(0, 0, 0, 100*ms, 50*ms), hold(1, 1, 20*ms, 120*ms, 30*ms)},
			pairs: [][2]int{{0, 1}},
		},
		{
			name:  "holder that never released overlaps until its validity ends",
			holds: []history.Hold{hold(0, 0, 0, 100*ms, 0), hold(1, 1, 99*ms, 200*ms, 150*ms)},
			pairs: [][2]int{{0, 1}},
		},
		{
			name: "release after the validity ended is clamped to the validity",
			// The first holder overran its validity; the next acquired after
			// the validity. Not a violation of the lock.
			holds: []history.Hold{hold(0, 0, 0, 100*ms, 300*ms), hold(1, 1, 101*ms, 200*ms, 150*ms)},
		},
		{
			name:  "three at once gives three pairs",
			holds: []history.Hold{hold(0, 0, 0, 100*ms, 90*ms), hold(1, 1, 10*ms, 110*ms, 80*ms), hold(2, 2, 20*ms, 120*ms, 70*ms)},
			pairs: [][2]int{{0, 1}, {0, 2}, {1, 2}},
		},
		{
			name: "different keys never conflict",
			holds: []history.Hold{
				{ID: 0, Key: "a", Acquired: 0, Until: 100 * ms},
				{ID: 1, Key: "b", Acquired: 10 * ms, Until: 110 * ms},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [][2]int
			for _, v := range Exclusion(tt.holds) {
				got = append(got, [2]int{v.First.ID, v.Second.ID})
				assert.Positive(t, v.Overlap)
			}
			assert.ElementsMatch(t, tt.pairs, got)
		})
	}
}
