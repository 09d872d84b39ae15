package scenario

// clientPauseUnguarded is scenario 14, the negative control of C3:
// scenario 10's story, a holder frozen past its TTL that writes late, with
// a fenced store whose writes skip the guard. The database accepts the
// late write, and C3 must flag it as stale; it must flag nothing else.
func clientPauseUnguarded() *Scenario {
	s := clientPause()
	s.ID, s.Name = "14", "client-pause-unguarded"
	s.Shows = "scenario 10 with a fenced store whose writes skip the guard: the negative control of C3"
	s.Expected = "C3 MUST find the frozen holder's late write accepted as stale"
	s.Unguarded = true
	s.Expect = func(r *Result) []string {
		cs := caught(r)
		out := want(len(cs) == 1, "%d holders were frozen, want 1", len(cs))
		out = append(out, want(len(r.C3.Stale) >= 1, "C3 found no stale write, though the store had no guard")...)
		out = append(out, want(r.C3.Rejected == 0, "a store without a guard rejected %d writes", r.C3.Rejected)...)
		frozen := map[int]bool{}
		for _, h := range cs {
			frozen[h.ID] = true
			for _, w := range writesOf(r, h.ID) {
				out = append(out, want(w.Accepted, "the frozen holder's late write (fence %d) was refused by a store without a guard", w.Fence)...)
			}
		}
		for _, w := range r.C3.Stale {
			out = append(out, want(frozen[w.Hold], "C3 flagged a write of hold %d, which was not frozen (fence %d)", w.Hold, w.Fence)...)
		}
		return append(out, join(exclusive(r), recovered(r))...)
	}
	return s
}
