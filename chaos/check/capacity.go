package check

import (
	"cmp"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// Excess is a moment when more holds of one key overlapped than its
// permits allow: Holds are the permits' holds open at At, the start of
// the last of them.
type Excess struct {
	Key   string
	At    time.Duration
	Holds []history.Hold // in order of acquisition; len(Holds) > the permits
}

// Capacity is checker C6, for semaphores. It returns each acquisition of a
// key that left more than permits holds of that key open at once, with
// the holds open then, in the order of those acquisitions. A hold is open
// over [Acquired, End). A run in which the semaphore kept its bound
// returns none. With permits 1 it fires where Exclusion does.
func Capacity(holds []history.Hold, permits int) []Excess {
	var out []Excess
	for key, hs := range byKey(holds) {
		var open []history.Hold // holds not ended when the next one began
		for _, h := range hs {
			open = slices.DeleteFunc(open, func(o history.Hold) bool { return o.End() <= h.Acquired })
			open = append(open, h)
			if len(open) > permits {
				out = append(out, Excess{Key: key, At: h.Acquired, Holds: slices.Clone(open)})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Excess) int { return cmp.Compare(a.At, b.At) })
	return out
}
