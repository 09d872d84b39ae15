package workload

import (
	"sync"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// Fenced is the resource of checker C3: a store that accepts a write only
// with a fence at least as high as the highest it has accepted, and records
// every write, accepted or not, in the history in the order it decided.
type Fenced struct {
	h       *history.History
	mu      sync.Mutex
	highest int64
}

// NewFenced returns an empty fenced store that records into h.
func NewFenced(h *history.History) *Fenced { return &Fenced{h: h} }

// Write offers a write from the given hold with its fence and reports
// whether the store accepted it.
func (f *Fenced) Write(hold, client int, fence int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	ok := fence >= f.highest
	if ok {
		f.highest = fence
	}
	f.h.Write(history.Write{Hold: hold, Client: client, Fence: fence, Accepted: ok})
	return ok
}

// Highest returns the highest fence the store has accepted.
func (f *Fenced) Highest() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.highest
}
