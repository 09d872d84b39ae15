package quorumlock

// Quorum returns the number of votes that make a majority of n nodes: n/2+1.
// It returns 0 for n <= 0.
func Quorum(n int) int {
	if n <= 0 {
		return 0
	}
	return n/2 + 1
}

// PermitQuorum returns the number of masters, of n, that a permit of a
// semaphore of k permits must hold: floor(n·k/(k+1)) + 1. It returns 0 for
// n <= 0 or k <= 0. For k = 1 it is Quorum(n).
//
// Why not a majority. Each master admits at most k holders of the key. For
// k >= 2, majorities do not bound the holders: on 5 masters with k = 2,
// holders A on {1,2,3}, B on {3,4,5} and C on {1,2,4} each hold a majority
// while no master admits more than 2.
//
// Proof that q = PermitQuorum(n, k) admits at most k holders. k+1 holders,
// each on q masters, take (k+1)·q master slots; n masters have at most n·k
// slots. q > n·k/(k+1) gives (k+1)·q > n·k, so k+1 holders cannot all fit.
// The bound is tight: with q-1 masters each, k+1 holders fit (see the
// tests), so no smaller quorum is safe.
//
// The cost. A permit is refused while more than n-q masters fail: n-q may
// fail, fewer than the n-Quorum(n) a lock tolerates. When q = n (k >= n-1
// for n >= 2), no master may fail.
func PermitQuorum(n, k int) int {
	if n <= 0 || k <= 0 {
		return 0
	}
	return n*k/(k+1) + 1
}
