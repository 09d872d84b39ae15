package quorumlock

// Quorum returns the number of votes that make a majority of n nodes: n/2+1.
// It returns 0 for n <= 0.
func Quorum(n int) int {
	if n <= 0 {
		return 0
	}
	return n/2 + 1
}
