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

func TestPermitQuorum(t *testing.T) {
	for _, tc := range []struct{ n, k, want int }{
		{0, 1, 0}, {-1, 2, 0}, {3, 0, 0}, {3, -1, 0},
		{1, 1, 1}, {1, 2, 1}, {1, 5, 1},
		{2, 1, 2}, {2, 2, 2}, {2, 3, 2},
		{3, 1, 2}, {3, 2, 3}, {3, 3, 3},
		{4, 1, 3}, {4, 2, 3}, {4, 3, 4}, {4, 4, 4},
		{5, 1, 3}, {5, 2, 4}, {5, 3, 4}, {5, 4, 5}, {5, 9, 5},
		{6, 1, 4}, {6, 2, 5}, {6, 5, 6},
		{7, 1, 4}, {7, 2, 5}, {7, 3, 6}, {7, 6, 7},
		{9, 2, 7}, {9, 3, 7}, {9, 8, 9},
	} {
		assert.Equal(t, tc.want, quorumlock.PermitQuorum(tc.n, tc.k), "PermitQuorum(%d, %d)", tc.n, tc.k)
	}
}

// PermitQuorum is Quorum for one permit, and never above n.
func TestPermitQuorum_OnePermitIsAMajority(t *testing.T) {
	for n := 1; n <= 12; n++ {
		assert.Equal(t, quorumlock.Quorum(n), quorumlock.PermitQuorum(n, 1), "n=%d", n)
		for k := 1; k <= 12; k++ {
			assert.LessOrEqual(t, quorumlock.PermitQuorum(n, k), n, "n=%d k=%d", n, k)
		}
	}
}

// fits reports whether k+1 holders can each hold q distinct masters of n
// with no master holding more than k of them, and returns such holders.
// Round-robin over the n·k slots, master by master, gives each holder q
// distinct masters whenever (k+1)·q <= n·k: a holder's q consecutive slots
// in the order (slot j is on master j mod n) are distinct while q <= n.
func fits(n, k, q int) ([][]int, bool) {
	if (k+1)*q > n*k || q > n {
		return nil, false
	}
	holders := make([][]int, k+1)
	j := 0
	for h := range holders {
		for range q {
			holders[h] = append(holders[h], j%n)
			j++
		}
	}
	return holders, true
}

// With one master fewer than PermitQuorum, k+1 holders fit: the bound is
// tight. With PermitQuorum, an exhaustive search over small n finds no way
// for k+1 holders to fit.
func TestPermitQuorum_Tight(t *testing.T) {
	for n := 1; n <= 7; n++ {
		for k := 1; k <= 6; k++ {
			q := quorumlock.PermitQuorum(n, k)
			if q > 1 {
				holders, ok := fits(n, k, q-1)
				if assert.True(t, ok, "n=%d k=%d: %d holders on %d masters each should fit", n, k, k+1, q-1) {
					load := make([]int, n)
					for _, ms := range holders {
						seen := map[int]bool{}
						for _, m := range ms {
							assert.False(t, seen[m], "n=%d k=%d: a holder twice on master %d", n, k, m)
							seen[m] = true
							load[m]++
						}
					}
					for m, l := range load {
						assert.LessOrEqual(t, l, k, "n=%d k=%d: master %d over-admits", n, k, m)
					}
				}
			}
			assert.False(t, anyFit(n, k, q), "n=%d k=%d: %d holders fit on %d masters each", n, k, k+1, q)
		}
	}
}

// anyFit searches every choice of q masters for each of k+1 holders for
// one that no master admits more than k of.
func anyFit(n, k, q int) bool {
	var sets []int // bitmasks of n bits with q set
	for s := range 1 << n {
		if bits(s) == q {
			sets = append(sets, s)
		}
	}
	load := make([]int, n)
	var place func(h, from int) bool
	place = func(h, from int) bool {
		if h == k+1 {
			return true
		}
		for i := from; i < len(sets); i++ { // holders in nondecreasing order of their sets
			ok := true
			for m := range n {
				if sets[i]&(1<<m) != 0 && load[m] == k {
					ok = false
				}
			}
			if !ok {
				continue
			}
			for m := range n {
				if sets[i]&(1<<m) != 0 {
					load[m]++
				}
			}
			found := place(h+1, i)
			for m := range n {
				if sets[i]&(1<<m) != 0 {
					load[m]--
				}
			}
			if found {
				return true
			}
		}
		return false
	}
	return place(0, 0)
}

func bits(s int) int {
	n := 0
	for ; s != 0; s &= s - 1 {
		n++
	}
	return n
}
