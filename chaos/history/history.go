package history

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// History is the record of one run. It is safe for concurrent use. All its
// times are durations since the run's epoch, read from the process's
// monotonic clock, so the intervals of different clients compare exactly.
type History struct {
	epoch time.Time

	mu      sync.Mutex
	rec     Record
	last    map[int]string // the latest token of each client
	changed chan struct{}  // closed and replaced on every change
}

// Record is everything a History holds. A Record returned by Snapshot is a
// copy that the caller owns.
type Record struct {
	Attempts []Attempt
	Holds    []Hold
	Writes   []Write
	Acked    []int64 // elements whose write to the shared set was acknowledged
	Faults   []Fault
	Notes    []Note
	// Tokens maps every token a client generated to that client, whether
	// the attempt that used it succeeded or not.
	Tokens map[string]int
}

// New returns an empty History whose clock starts now.
func New() *History {
	return &History{
		epoch:   time.Now(),
		rec:     Record{Tokens: map[string]int{}},
		last:    map[int]string{},
		changed: make(chan struct{}),
	}
}

// Now returns the time since the run's epoch.
func (h *History) Now() time.Duration { return time.Since(h.epoch) }

// At converts a time taken from the process clock, such as a lock's Until,
// to the run's clock.
func (h *History) At(t time.Time) time.Duration { return t.Sub(h.epoch) }

// Epoch returns the instant the run's clock reads zero.
func (h *History) Epoch() time.Time { return h.epoch }

// update runs f under the lock and wakes every Await.
func (h *History) update(f func(r *Record)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(&h.rec)
	close(h.changed)
	h.changed = make(chan struct{})
}

// Token records that client generated token for an attempt.
func (h *History) Token(client int, token string) {
	h.update(func(r *Record) {
		r.Tokens[token] = client
		h.last[client] = token
	})
}

// LastToken returns the token client generated last. A client makes one
// attempt at a time, so after an attempt it is that attempt's token.
func (h *History) LastToken(client int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last[client]
}

// Attempt records one acquisition attempt.
func (h *History) Attempt(a Attempt) {
	h.update(func(r *Record) { r.Attempts = append(r.Attempts, a) })
}

// Acquire records the start of a hold and returns its ID.
func (h *History) Acquire(hold Hold) int {
	var id int
	h.update(func(r *Record) {
		id = len(r.Holds)
		hold.ID = id
		r.Holds = append(r.Holds, hold)
	})
	return id
}

// UpdateHold changes the hold with the given ID.
func (h *History) UpdateHold(id int, f func(*Hold)) {
	h.update(func(r *Record) {
		if id >= 0 && id < len(r.Holds) {
			f(&r.Holds[id])
		}
	})
}

// Ack records that the shared set acknowledged element.
func (h *History) Ack(element int64) {
	h.update(func(r *Record) { r.Acked = append(r.Acked, element) })
}

// Write records one write to the fenced store and returns its sequence
// number. The store calls it while it still holds its own lock, so the
// sequence is the order in which the store decided.
func (h *History) Write(w Write) int {
	h.update(func(r *Record) {
		w.Seq = len(r.Writes)
		w.At = h.Now()
		r.Writes = append(r.Writes, w)
	})
	return w.Seq
}

// FaultStart records that a fault began and returns its ID for FaultEnd.
func (h *History) FaultStart(node, client int, kind, label string) int {
	var id int
	h.update(func(r *Record) {
		id = len(r.Faults)
		r.Faults = append(r.Faults, Fault{ID: id, Node: node, Client: client, Kind: kind, Label: label, Start: h.Now()})
	})
	return id
}

// FaultEnd records that a fault healed.
func (h *History) FaultEnd(id int) {
	h.update(func(r *Record) {
		if id >= 0 && id < len(r.Faults) && r.Faults[id].Open() {
			r.Faults[id].End = max(h.Now(), r.Faults[id].Start+time.Microsecond)
		}
	})
}

// Span records a fault whose start and end are both known, such as a
// master blocked by a dead client's token until the token expires, and
// returns its ID. end must not be before start.
func (h *History) Span(node, client int, kind, label string, start, end time.Duration) int {
	var id int
	h.update(func(r *Record) {
		id = len(r.Faults)
		r.Faults = append(r.Faults, Fault{ID: id, Node: node, Client: client, Kind: kind, Label: label, Start: start, End: max(end, start+time.Microsecond)})
	})
	return id
}

// Instant records an event without duration, such as a clock jump.
func (h *History) Instant(node int, kind, label string) {
	h.update(func(r *Record) {
		now := h.Now()
		r.Faults = append(r.Faults, Fault{ID: len(r.Faults), Node: node, Client: AllClients, Kind: kind, Label: label, Start: now, End: now})
	})
}

// Notef adds a line of text to the run's notes.
func (h *History) Notef(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	h.update(func(r *Record) { r.Notes = append(r.Notes, Note{At: h.Now(), Text: text}) })
}

// Snapshot returns a copy of the record.
func (h *History) Snapshot() Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.rec
	out := Record{
		Attempts: append([]Attempt(nil), r.Attempts...),
		Holds:    append([]Hold(nil), r.Holds...),
		Writes:   append([]Write(nil), r.Writes...),
		Acked:    append([]int64(nil), r.Acked...),
		Faults:   append([]Fault(nil), r.Faults...),
		Notes:    append([]Note(nil), r.Notes...),
		Tokens:   make(map[string]int, len(r.Tokens)),
	}
	for k, v := range r.Tokens {
		out.Tokens[k] = v
	}
	return out
}

// Await blocks until pred holds or ctx is done, and returns ctx's error in
// the latter case. pred runs under the history's lock each time the history
// changes: it must be quick, must not keep the Record's slices, and must not
// call back into the History.
func (h *History) Await(ctx context.Context, pred func(r *Record) bool) error {
	for {
		h.mu.Lock()
		ok := pred(&h.rec)
		ch := h.changed
		h.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// FailedTokens returns the tokens generated by attempts that did not
// become holds, as a set.
func (r *Record) FailedTokens() map[string]bool {
	held := make(map[string]bool, len(r.Holds))
	for _, h := range r.Holds {
		held[h.Token] = true
	}
	out := map[string]bool{}
	for t := range r.Tokens {
		if !held[t] {
			out[t] = true
		}
	}
	return out
}

// HoldsBy returns the holds of the given clients acquired after t.
func (r *Record) HoldsBy(clients []int, after time.Duration) []Hold {
	in := map[int]bool{}
	for _, c := range clients {
		in[c] = true
	}
	var out []Hold
	for _, h := range r.Holds {
		if in[h.Client] && h.Acquired > after {
			out = append(out, h)
		}
	}
	return out
}
