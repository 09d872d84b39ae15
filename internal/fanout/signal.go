package fanout

import "sync"

// Signal is an event that happens once: a channel closed when it fires,
// and functions run after it. Init it before use; the zero Signal is not
// ready.
type Signal struct {
	ch    chan struct{}
	mu    sync.Mutex // guards after, and orders it with closing ch
	after []func()
}

// Init makes s ready to fire.
func (s *Signal) Init() { s.ch = make(chan struct{}) }

// Done returns a channel closed once s has fired.
func (s *Signal) Done() <-chan struct{} { return s.ch }

// OnDone runs f once s has fired: at once, in the caller's goroutine, when
// it has; otherwise in the goroutine that fires it. f runs exactly once.
func (s *Signal) OnDone(f func()) {
	s.mu.Lock()
	select {
	case <-s.ch:
		s.mu.Unlock()
		f()
		return
	default:
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

// fire closes s's channel and returns the functions to run after it, for a
// caller with something to do first.
func (s *Signal) fire() []func() {
	s.mu.Lock()
	close(s.ch)
	after := s.after
	s.after = nil
	s.mu.Unlock()
	return after
}
