package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLost(t *testing.T) {
	tests := []struct {
		name         string
		acked, final []int64
		lost         []int64
		share        float64
	}{
		{name: "nothing written"},
		{name: "every acknowledged element kept", acked: []int64{1, 2, 3}, final: []int64{1, 2, 3}},
		{name: "unacknowledged extras are fine", acked: []int64{1}, final: []int64{1, 2}},
		{name: "an overlapping read-modify-write lost one", acked: []int64{1, 2, 3, 4}, final: []int64{1, 3, 4}, lost: []int64{2}, share: 0.25},
		{name: "everything lost", acked: []int64{5, 6}, lost: []int64{5, 6}, share: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Lost(tt.acked, tt.final)
			assert.Equal(t, len(tt.acked), l.Acked)
			assert.Equal(t, len(tt.lost), l.Lost)
			assert.Equal(t, tt.lost, l.Missing)
			assert.InDelta(t, tt.share, l.Share(), 1e-9)
		})
	}
}
