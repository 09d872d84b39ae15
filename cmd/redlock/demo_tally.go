package main

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// tally is what the demo checks: holders at once, counted in this process,
// and fences in the order the lock was handed on.
type tally struct {
	mu           sync.Mutex
	holders      int
	maxHolders   int
	acquisitions int
	firstFence   int64
	lastFence    int64
	regressions  int
	errs         []error

	phases     []phase   // one per stage of the fault schedule
	lostAt     time.Time // when the quorum was lost
	backAt     time.Time // when it came back
	waitResume bool      // the quorum is back; the next acquisition is the first since
	resumed    bool
	resumeIn   time.Duration // from backAt to the first acquisition
}

// phase counts acquisitions during one stage of the fault schedule.
type phase struct {
	label string
	n     int
}

// acquisition is what the tally noticed about one acquisition.
type acquisition struct {
	overlap      bool          // someone else was counted as holder too
	regressed    bool          // the fence was not above the previous one
	resumedAfter time.Duration // > 0 for the first acquisition after the quorum came back: how long after
	outage       time.Duration // and how long the quorum had been lost
}

func (t *tally) init(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phases = []phase{{label: fmt.Sprintf("%d of %d up", n, n)}}
}

// acquired counts a new holder with its fence.
func (t *tally) acquired(fence int64) acquisition {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ev acquisition
	t.holders++
	t.maxHolders = max(t.maxHolders, t.holders)
	ev.overlap = t.holders > 1
	if t.acquisitions > 0 && fence <= t.lastFence {
		t.regressions++
		ev.regressed = true
	}
	if t.acquisitions == 0 {
		t.firstFence = fence
	}
	t.acquisitions++
	t.lastFence = fence
	t.phases[len(t.phases)-1].n++
	if t.waitResume {
		t.waitResume, t.resumed = false, true
		t.resumeIn = max(time.Since(t.backAt), time.Microsecond)
		ev.resumedAfter, ev.outage = t.resumeIn, t.backAt.Sub(t.lostAt)
	}
	return ev
}

// released counts a holder that stopped believing it holds the lock.
func (t *tally) released() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.holders--
}

// failed records a worker that stopped on an error.
func (t *tally) failed(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs = append(t.errs, err)
}

// enter starts a new stage of the fault schedule: quorumLost when no quorum
// can form any more, quorumBack when it can again.
func (t *tally) enter(label string, quorumLost, quorumBack bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phases = append(t.phases, phase{label: label})
	if quorumLost {
		t.lostAt = time.Now()
	}
	if quorumBack && !t.lostAt.IsZero() {
		t.waitResume, t.backAt = true, time.Now()
	}
}

// summary prints the tally and fails unless the lock behaved.
func (d *demo) summary() error {
	t := &d.tally
	t.mu.Lock()
	defer t.mu.Unlock()
	w := d.out.w
	var by []string
	for _, p := range t.phases {
		by = append(by, fmt.Sprintf("%s: %d", p.label, p.n))
	}
	fmt.Fprintf(w, "\nSummary\n")
	fmt.Fprintf(w, "  acquisitions            %d", t.acquisitions)
	if len(t.phases) > 1 {
		fmt.Fprintf(w, " (%s)", strings.Join(by, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  max concurrent holders  %d\n", t.maxHolders)
	switch {
	case t.acquisitions == 0:
		fmt.Fprintf(w, "  fences                  none\n")
	case t.regressions == 0:
		fmt.Fprintf(w, "  fences                  %d .. %d, strictly increasing\n", t.firstFence, t.lastFence)
	default:
		fmt.Fprintf(w, "  fences                  %d .. %d, %d did not increase\n", t.firstFence, t.lastFence, t.regressions)
	}
	if !t.lostAt.IsZero() {
		if t.resumed {
			fmt.Fprintf(w, "  without a quorum        no holder for %v; the first hand-off came %v after the masters were back\n",
				t.backAt.Sub(t.lostAt).Round(10*time.Millisecond), roundShort(t.resumeIn))
		} else {
			fmt.Fprintf(w, "  without a quorum        no hand-off since; the demo ended first\n")
		}
	}

	var problems []string
	if t.acquisitions == 0 {
		problems = append(problems, "no worker got the lock")
	}
	if t.maxHolders > 1 {
		problems = append(problems, fmt.Sprintf("%d workers held the lock at once", t.maxHolders))
	}
	if t.regressions > 0 {
		problems = append(problems, fmt.Sprintf("%d fences did not increase", t.regressions))
	}
	for _, err := range t.errs {
		problems = append(problems, fmt.Sprintf("a worker stopped: %v", err))
	}
	if len(problems) > 0 {
		fmt.Fprintf(w, "FAILED\n")
		return fail(exitError, "%s", strings.Join(problems, "; "))
	}
	fmt.Fprintf(w, "OK: one holder at a time, fences strictly increasing\n")
	return nil
}

// roundShort rounds a duration for display: to the millisecond below a
// second, to 10ms above.
func roundShort(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}
