package workload

import (
	"slices"
	"sync"
)

// Set is the shared resource of checker C2: a set that clients read and
// write back whole. Each call is atomic, a read followed by a write is not,
// so two clients that do it at once lose one's element. Only the lock keeps
// that from happening.
type Set struct {
	mu    sync.Mutex
	elems []int64
}

// Read returns a copy of the set's elements.
func (s *Set) Read() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.elems)
}

// Write replaces the set's elements.
func (s *Set) Write(elems []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.elems = slices.Clone(elems)
}
