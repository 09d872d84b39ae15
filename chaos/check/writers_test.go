package check

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quorumlock/quorumlock/chaos/history"
)

func read(id, client int, acquired, until, released time.Duration) history.Hold {
	h := hold(id, client, acquired, until, released)
	h.Shared = true
	return h
}

func TestWriters(t *testing.T) {
	tests := []struct {
		name  string
		holds []history.Hold
		pairs [][2]int
	}{
		{name: "no holds"},
		{
			name:  "readers share",
			holds: []history.Hold{read(0, 0, 0, 100*ms, 50*ms), read(1, 1, 10*ms, 110*ms, 60*ms), read(2, 2, 20*ms, 120*ms, 70*ms)},
		},
		{
			name:  "a writer after the readers",
			holds: []history.Hold{read(0, 0, 0, 100*ms, 50*ms), read(1, 1, 10*ms, 110*ms, 60*ms), hold(2, 2, 60*ms, 160*ms, 70*ms)},
		},
		{
			name:  "a writer beside a reader",
			holds: []history.Hold{read(0, 0, 0, 100*ms, 50*ms), hold(1, 1, 40*ms, 140*ms, 60*ms)},
			pairs: [][2]int{{0, 1}},
		},
		{
			name:  "a reader beside a writer",
			holds: []history.Hold{hold(0, 0, 0, 100*ms, 50*ms), read(1, 1, 40*ms, 140*ms, 60*ms)},
			pairs: [][2]int{{0, 1}},
		},
		{
			name:  "two writers",
			holds: []history.Hold{hold(0, 0, 0, 100*ms, 50*ms), hold(1, 1, 40*ms, 140*ms, 60*ms)},
			pairs: [][2]int{{0, 1}},
		},
		{
			name:  "a reader that never released stays open until its validity ends",
			holds: []history.Hold{read(0, 0, 0, 100*ms, 0), hold(1, 1, 99*ms, 200*ms, 150*ms)},
			pairs: [][2]int{{0, 1}},
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
			for _, v := range Writers(tt.holds) {
				got = append(got, [2]int{v.First.ID, v.Second.ID})
			}
			assert.Equal(t, tt.pairs, got)
		})
	}
}
