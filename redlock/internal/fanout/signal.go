package fanout

import (
	"sync"
	"sync/atomic"
)

// Signal is an event that happens once: a flag set, and a channel closed,
// when it fires, and functions run after it. The zero Signal is ready; its
// channel is made only when Done is first called, so that an event nobody
// selects on costs no channel.
type Signal struct {
	fired atomic.Bool
	mu    sync.Mutex    // guards ch and after, and orders them with firing
	ch    chan struct{} // made by the first Done
	after []func()
}

// Fired reports whether s has fired. Whatever was written before s fired
// is visible to a caller that sees true.
func (s *Signal) Fired() bool { return s.fired.Load() }

// Done returns a channel closed once s has fired.
func (s *Signal) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
		if s.fired.Load() {
			close(s.ch)
		}
	}
	return s.ch
}

// OnDone runs f once s has fired: at once, in the caller's goroutine, when
// it has; otherwise in the goroutine that fires it. f runs exactly once.
func (s *Signal) OnDone(f func()) {
	s.mu.Lock()
	if s.fired.Load() {
		s.mu.Unlock()
		f()
		return
	}
	s.after = append(s.after, f)
	s.mu.Unlock()
}

// Fire fires s, once, and runs the functions OnDone registered before.
func (s *Signal) Fire() {
	for _, f := range s.fire() {
		f()
	}
}

// fire fires s and returns the functions to run after it, for a caller
// with something to do first. Firing twice panics, as closing a channel
// twice does.
func (s *Signal) fire() []func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fired.Swap(true) {
		panic("fanout: Signal fired twice")
	}
	if s.ch != nil {
		close(s.ch)
	}
	after := s.after
	s.after = nil
	return after
}
