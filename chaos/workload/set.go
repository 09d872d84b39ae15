package workload

import (
	"slices"
	"sync"
)

// Set is the shared resource of checker C2: one set per lock key, which
// clients read and write back whole. Each call is atomic, a read followed by
// a write is not, so two clients that do it at once on the same key lose
// one's element. Only the key's lock keeps that from happening.
type Set struct {
	mu    sync.Mutex
	elems map[string][]int64
}

// Read returns a copy of key's set.
func (s *Set) Read(key string) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.elems[key])
}

// Write replaces key's set.
func (s *Set) Write(key string, elems []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.elems == nil {
		s.elems = map[string][]int64{}
	}
	s.elems[key] = slices.Clone(elems)
}

// All returns the elements of every key's set. Elements are unique across
// keys, so C2 checks them all at once.
func (s *Set) All() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for _, e := range s.elems {
		out = append(out, e...)
	}
	slices.Sort(out)
	return out
}
