package bench

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/internal/histogram"
)

// ContentionConfig sets up goroutines contending for one key.
type ContentionConfig struct {
	Key string
	// Waiters holds one Waiter per goroutine: the same one repeated for
	// goroutines sharing a client, or one each for separate clients.
	Waiters []Waiter
	// Duration and MaxLocks bound the run; it ends at whichever comes first.
	Duration time.Duration
	MaxLocks int
	// Quorum is the number of masters a lock needs, for split votes.
	Quorum int
	// Permits is how many may hold the key at once: a semaphore's permits.
	// 0 means 1, a lock.
	Permits int
	// Hold is how long each critical section lasts; 0 releases at once.
	Hold time.Duration
	// Observer, if set, counts every attempt's votes; it must watch Key
	// with Base as its clock origin.
	Observer *Observer
	// Base is the origin of the shared monotonic clock every timestamp is
	// taken against. The zero value means the start of the run.
	Base time.Time
	// MeasureStalls runs one more goroutine that sleeps 1 ms at a time and
	// records how late it wakes: how long the process could not run, from
	// the machine's load or the Go runtime, during the run.
	MeasureStalls bool
}

// ContentionResult is what a contended run measured.
type ContentionResult struct {
	Locks   int           // critical sections entered
	Elapsed time.Duration // from start until every goroutine was done
	Wins    []int         // critical sections per goroutine
	// Handoff runs from a holder starting its release to the next holder
	// returning from Lock, on one monotonic clock.
	Handoff histogram.Histogram
	// SelfHandoffs counts hand-offs where the releasing goroutine took the
	// lock again.
	SelfHandoffs int
	// Wait is each completed Lock call's duration; MaxWait also counts the
	// calls still waiting when the run ended.
	Wait    histogram.Histogram
	MaxWait time.Duration
	// Overlaps counts critical sections entered while Permits others were
	// in progress: mutual exclusion, or a semaphore's bound, broken. It
	// must be 0.
	Overlaps int
	Errors   int // Lock or Release errors other than the end of the run
	FirstErr error
	// MaxStall is the longest a 1 ms sleep overslept (with MeasureStalls).
	MaxStall time.Duration

	// From the observer (zero without one).
	Attempts     int                 // acquisition attempts seen on the wire
	Splits       int                 // attempts that got some votes but not a quorum
	SplitResolve histogram.Histogram // from a split attempt's start to the next lock taken
	Unresolved   int                 // split attempts with no lock taken after them
}

// Throughput returns critical sections per second.
func (r *ContentionResult) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Locks) / r.Elapsed.Seconds()
}

// MaxShare returns the largest share of critical sections one goroutine won.
func (r *ContentionResult) MaxShare() float64 {
	if r.Locks == 0 {
		return 0
	}
	return float64(slices.Max(r.Wins)) / float64(r.Locks)
}

const (
	// maxContentionErrors stops a run whose contender keeps failing.
	maxContentionErrors = 100
	// maxLogged bounds the acquisition log that split votes are matched
	// against; later acquisitions are counted but not logged.
	maxLogged = 1 << 22
)

// contender is one goroutine's own tallies, merged at the end.
type contender struct {
	wins, self, errs int
	firstErr         error
	handoff, wait    histogram.Histogram
	maxWait          time.Duration
}

// RunContention runs len(cfg.Waiters) goroutines that each loop: Lock the
// key, note the critical section, Release at once. It checks mutual
// exclusion (or, with Permits, the semaphore's bound) in-process with a
// count of the holders that only a holder may raise.
func RunContention(ctx context.Context, cfg ContentionConfig) (*ContentionResult, error) {
	switch {
	case len(cfg.Waiters) == 0:
		return nil, errors.New("bench: no waiters")
	case cfg.Duration <= 0 || cfg.MaxLocks <= 0:
		return nil, errors.New("bench: a contended run needs positive bounds")
	case cfg.Key == "":
		return nil, errors.New("bench: empty key")
	}
	for _, w := range cfg.Waiters {
		if w == nil {
			return nil, errors.New("bench: nil waiter")
		}
	}
	base := cfg.Base
	if base.IsZero() {
		base = time.Now()
	}
	since := func() time.Duration { return time.Since(base) }

	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var (
		holders     atomic.Int64
		overlaps    atomic.Int64
		total       atomic.Int64
		lastRelease atomic.Int64 // since base; -1 before the first release
		lastHolder  atomic.Int64
	)
	lastRelease.Store(-1)
	lastHolder.Store(-1)
	permits := int64(max(cfg.Permits, 1))

	// Acquisition times go into one slice made up front, each at its own
	// index, so the loop allocates nothing of its own.
	acquired := make([]time.Duration, min(cfg.MaxLocks+len(cfg.Waiters), maxLogged))
	relCtx := context.WithoutCancel(ctx)
	cs := make([]*contender, len(cfg.Waiters))
	start := time.Now()
	var wg sync.WaitGroup
	for g, w := range cfg.Waiters {
		c := &contender{}
		cs[g] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				t0 := since()
				h, err := w.Lock(runCtx, cfg.Key)
				t1 := since()
				if err != nil {
					c.maxWait = max(c.maxWait, t1-t0)
					if runCtx.Err() != nil {
						return
					}
					c.fail(err, cancel)
					continue
				}
				if holders.Add(1) > permits {
					overlaps.Add(1)
				}
				c.wait.Record(t1 - t0)
				c.maxWait = max(c.maxWait, t1-t0)
				if prev := lastRelease.Load(); prev >= 0 {
					c.handoff.Record(t1 - time.Duration(prev))
					if lastHolder.Load() == int64(g) {
						c.self++
					}
				}
				c.wins++
				n := total.Add(1)
				if n <= int64(len(acquired)) {
					acquired[n-1] = t1
				}
				if cfg.Hold > 0 {
					time.Sleep(cfg.Hold)
				}
				holders.Add(-1)
				lastHolder.Store(int64(g))
				lastRelease.Store(int64(since()))

				// Release even when the run has just ended. The ctx is never
				// cancelled: Release returns at quorum, and the deletes still
				// on their way to the other masters must not be cut short.
				// Each contender bounds them by its own node timeout.
				if err := h.Release(relCtx); err != nil {
					c.fail(err, cancel)
				}
				if n >= int64(cfg.MaxLocks) {
					cancel()
				}
			}
		}()
	}
	var maxStall time.Duration
	if cfg.MeasureStalls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				t0 := time.Now()
				time.Sleep(time.Millisecond)
				maxStall = max(maxStall, time.Since(t0)-time.Millisecond)
			}
		}()
	}
	wg.Wait()

	r := &ContentionResult{Elapsed: time.Since(start), Overlaps: int(overlaps.Load()), MaxStall: maxStall}
	acquired = acquired[:min(int(total.Load()), len(acquired))]
	for _, c := range cs {
		r.Wins = append(r.Wins, c.wins)
		r.Locks += c.wins
		r.SelfHandoffs += c.self
		r.Errors += c.errs
		if r.FirstErr == nil {
			r.FirstErr = c.firstErr
		}
		r.Handoff.Merge(&c.handoff)
		r.Wait.Merge(&c.wait)
		r.MaxWait = max(r.MaxWait, c.maxWait)
	}
	slices.Sort(acquired)
	if cfg.Observer != nil {
		r.splits(cfg.Observer.Attempts(), acquired, cfg.Quorum)
	}
	if r.Errors >= maxContentionErrors {
		return r, errors.Join(errors.New("bench: contended run stopped after too many errors"), r.FirstErr)
	}
	return r, nil
}

func (c *contender) fail(err error, stop context.CancelFunc) {
	c.errs++
	if c.firstErr == nil {
		c.firstErr = err
	}
	if c.errs >= maxContentionErrors {
		stop()
	}
}

// splits counts the attempts that got some but not a quorum of votes, and
// how long after each such attempt began the lock was next taken.
func (r *ContentionResult) splits(attempts []Attempt, acquired []time.Duration, quorum int) {
	r.Attempts = len(attempts)
	for _, a := range attempts {
		if a.Yes == 0 || a.Yes >= quorum {
			continue
		}
		r.Splits++
		i, _ := slices.BinarySearch(acquired, a.Start)
		if i == len(acquired) {
			r.Unresolved++
			continue
		}
		r.SplitResolve.Record(acquired[i] - a.Start)
	}
}
