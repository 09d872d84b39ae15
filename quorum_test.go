package quorumlock_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quorumlock/quorumlock"
)

func TestQuorum(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{-1, 0}, {0, 0}, {1, 1}, {2, 2}, {3, 2}, {4, 3}, {5, 3}, {6, 4}, {7, 4},
	} {
		assert.Equal(t, tc.want, quorumlock.Quorum(tc.n), "Quorum(%d)", tc.n)
	}
}

// Any two quorums of the same n overlap: that is what makes a majority lock safe.
func TestQuorum_TwoQuorumsOverlap(t *testing.T) {
	for n := 1; n <= 9; n++ {
		assert.Greater(t, 2*quorumlock.Quorum(n), n, "n=%d", n)
	}
}
