package check

import "slices"

// LostWrites is the result of checker C2.
type LostWrites struct {
	Acked   int     // elements whose write was acknowledged
	Lost    int     // of those, how many the final set lacks
	Missing []int64 // the lost elements, in ascending order
}

// Share returns the lost share of the acknowledged elements, in [0, 1].
func (l LostWrites) Share() float64 {
	if l.Acked == 0 {
		return 0
	}
	return float64(l.Lost) / float64(l.Acked)
}

// Lost is checker C2, as Jepsen's lock-set workload: every element a client
// added to the shared set under the lock, and whose write was acknowledged,
// must be in the final set. A write made by a holder that overlapped another
// holder's read-modify-write loses that holder's element.
func Lost(acked, final []int64) LostWrites {
	in := make(map[int64]bool, len(final))
	for _, e := range final {
		in[e] = true
	}
	l := LostWrites{Acked: len(acked)}
	for _, e := range acked {
		if !in[e] {
			l.Lost++
			l.Missing = append(l.Missing, e)
		}
	}
	slices.Sort(l.Missing)
	return l
}
