package clock

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Fake is a Clock that moves only when told to. It lets tests drive timeouts,
// retries and watchdogs without sleeping.
//
// Timers and contexts made by a Fake fire during Advance, in deadline order.
type Fake struct {
	advance sync.Mutex // serialises Advance, which releases mu while it fires contexts

	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever the set of timers changes
}

// NewFake returns a fake clock that reads start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since returns the fake time elapsed since t.
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// NewTimer returns a timer that fires when the fake time reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{clock: f, c: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.schedule(t, d)
	return t
}

// WithTimeout returns a context that behaves as one from context.WithTimeout
// on the fake time: when the fake time reaches now+d it is cancelled with
// context.DeadlineExceeded, and so is every context derived from it. The
// context, and those derived from it by context.WithCancel, WithTimeout and
// the like, are done before Advance returns; a context derived through a
// context.WithValue layer follows on a goroutine of package context. Its
// Deadline is the fake deadline, or the parent's if that is earlier. Until it
// is done it counts as a parked timer.
func (f *Fake) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return newTimeoutCtx(f, parent, d)
}

// Advance moves the fake time forward by d and fires every timer that falls due,
// in deadline order. Concurrent calls take turns, so their durations add up.
// A negative d counts as 0: the fake time never goes backwards.
func (f *Fake) Advance(d time.Duration) {
	f.advance.Lock()
	defer f.advance.Unlock()
	d = max(d, 0)
	f.mu.Lock()
	end := f.now.Add(d)
	for {
		t := f.nextDue(end)
		if t == nil {
			break
		}
		f.now = t.when
		f.remove(t)
		if t.fn == nil {
			// Sent under f.mu, so that a Stop or Reset that returns
			// before it is never followed by this value.
			t.send(t.when)
			continue
		}
		f.mu.Unlock()
		t.fn()
		f.mu.Lock()
	}
	f.now = end
	f.mu.Unlock()
}

// Timers returns how many timers and contexts are waiting to fire.
func (f *Fake) Timers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// BlockUntil waits until at least n timers are waiting to fire, or ctx is done.
// Tests call it to know that the code under test has parked on the clock.
func (f *Fake) BlockUntil(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		if len(f.timers) >= n {
			f.mu.Unlock()
			return nil
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// schedule parks t to fire at now+d. f.mu must be held.
//
// A t that is due already is not parked. A timer's value is then ready before
// schedule returns, as with time.NewTimer(0). A context is reported due
// instead: the caller cancels it once f.mu is released.
func (f *Fake) schedule(t *fakeTimer, d time.Duration) (due bool) {
	t.when = f.now.Add(d)
	if d <= 0 {
		if t.fn == nil {
			t.send(f.now)
		}
		return t.fn != nil
	}
	f.timers = append(f.timers, t)
	f.notify()
	return false
}

func (f *Fake) nextDue(end time.Time) *fakeTimer {
	sort.SliceStable(f.timers, func(i, j int) bool { return f.timers[i].when.Before(f.timers[j].when) })
	if len(f.timers) == 0 || f.timers[0].when.After(end) {
		return nil
	}
	return f.timers[0]
}

// remove unparks t. f.mu must be held. It reports whether t was parked.
func (f *Fake) remove(t *fakeTimer) bool {
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			f.notify()
			return true
		}
	}
	return false
}

func (f *Fake) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTimer struct {
	clock *Fake
	when  time.Time
	c     chan time.Time // for timers
	fn    func()         // for contexts
}

// send delivers v on a timer's channel unless a value is already waiting
// there. t.clock.mu must be held.
func (t *fakeTimer) send(v time.Time) {
	select {
	case t.c <- v:
	default:
	}
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

// drain discards a value delivered but not yet received, and reports whether
// there was one. t.clock.mu must be held.
func (t *fakeTimer) drain() bool {
	select {
	case <-t.c:
		return true
	default:
		return false
	}
}

// Stop behaves as time.Timer.Stop since Go 1.23: no value is received after
// it returns, and it reports true if it unparked the timer or discarded a
// value not yet received.
func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.clock.remove(t)
	return t.drain() || was
}

// Reset behaves as time.Timer.Reset since Go 1.23: a value from before the
// Reset is never received after it, and it reports as Stop does.
func (t *fakeTimer) Reset(d time.Duration) bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.clock.remove(t)
	was = t.drain() || was
	t.clock.schedule(t, d) // a timer, never a context: a due value is sent here
	return was
}
