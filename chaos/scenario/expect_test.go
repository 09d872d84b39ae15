package scenario

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quorumlock/quorumlock/chaos/check"
	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/internal/slot"
	"github.com/quorumlock/quorumlock/redlock"
)

// paused gives a result one frozen holder whose late write was accepted or
// not, and whose extension returned extendErr.
func paused(accepted bool, extendErr error) func(r *Result) {
	return func(r *Result) {
		r.Record.Holds = []history.Hold{{ID: 0, Caught: true, Fence: 3, Extended: true, ExtendErr: extendErr, Done: true}}
		r.Record.Writes = []history.Write{{Hold: 0, Fence: 3, Accepted: accepted}}
	}
}

// TestExpectations_FailWhenTheOutcomeIsWrong feeds the scenarios'
// expectations outcomes that must be refused, so that a scenario cannot
// pass by accident.
func TestExpectations_FailWhenTheOutcomeIsWrong(t *testing.T) {
	byID := map[string]*Scenario{}
	for _, s := range All() {
		byID[s.ID] = s
	}
	overlap := []check.Violation{{First: history.Hold{ID: 0}, Second: history.Hold{ID: 1, Client: 1}, Overlap: time.Millisecond}}
	clean := func(s *Scenario) *Result {
		return &Result{Scenario: s, Live: check.Liveness{OK: true}, Marks: map[string]time.Duration{}}
	}
	tests := []struct {
		id     string
		mutate func(r *Result)
		fails  bool
	}{
		{"04a", func(r *Result) {}, true}, // the negative control must see a double holder
		{"04a", func(r *Result) { r.C1 = overlap }, false},
		{"04b", func(r *Result) { r.C1 = overlap }, true},
		{"04c", func(r *Result) { r.C3.Stale = []history.Write{{}} }, true},
		{"04d", func(r *Result) { r.Live.OK = false }, true},
		{"04d", func(r *Result) { r.C4.Failed = []check.KeyState{{Key: "k"}} }, true},
		{"09", func(r *Result) { r.C1 = overlap; r.C3.Rejected = 1 }, false}, // the known weakness
		{"09", func(r *Result) { r.C3.Rejected = 1; r.C3.Stale = []history.Write{{}} }, true},
		{"09", func(r *Result) {}, true}, // nothing rejected
		{"10", paused(false, redlock.ErrLockLost), false},
		{"10", paused(true, redlock.ErrLockLost), true}, // its late write got through
		{"10", paused(false, nil), true},                // it was never told
		{"10", func(r *Result) { paused(false, redlock.ErrLockLost)(r); r.C4.NoTTL = []check.KeyState{{Key: "k"}} }, true},
		{"14", func(r *Result) { paused(true, redlock.ErrLockLost)(r); r.C3.Stale = r.Record.Writes }, false},
		{"14", paused(true, redlock.ErrLockLost), true},                                                                 // C3 did not fire
		{"14", func(r *Result) { paused(false, redlock.ErrLockLost)(r); r.C3.Rejected = 1 }, true},                      // the store refused
		{"14", func(r *Result) { paused(true, nil)(r); r.C3.Stale = []history.Write{{Hold: 7, Accepted: true}} }, true}, // C3 flagged another hold
	}
	for _, tt := range tests {
		r := clean(byID[tt.id])
		tt.mutate(r)
		got := r.Scenario.Expect(r)
		if tt.fails {
			assert.NotEmpty(t, got, "scenario %s", tt.id)
		} else {
			assert.Empty(t, got, "scenario %s", tt.id)
		}
	}
}

// lockChurnResult is a run of scenario 11 that went as expected: locks in
// every phase, ten a second throughout, every Lock call granted.
func lockChurnResult(s *Scenario) *Result {
	r := &Result{Scenario: s, Live: check.Liveness{OK: true}, Marks: map[string]time.Duration{
		"killed": time.Second, "restarted": 2 * time.Second, "paused": 4 * time.Second, "unpausing": 5 * time.Second,
	}}
	for i := range 60 {
		at := 50*time.Millisecond + time.Duration(i)*100*time.Millisecond
		r.Record.Holds = append(r.Record.Holds, history.Hold{ID: i, Client: i % 4, Acquired: at, Until: at + time.Second, Released: at + 10*time.Millisecond})
		r.Record.Attempts = append(r.Record.Attempts, history.Attempt{Client: i % 4, Start: at - 40*time.Millisecond, End: at, OK: true})
	}
	return r
}

// withoutHolds drops the holds acquired in [from, to) but keep.
func withoutHolds(r *Result, from, to time.Duration, keep int) {
	var out []history.Hold
	for _, h := range r.Record.Holds {
		if h.Acquired >= from && h.Acquired < to {
			if keep == 0 {
				continue
			}
			keep--
		}
		out = append(out, h)
	}
	r.Record.Holds = out
}

func TestExpectations_LockChurn(t *testing.T) {
	s := lockChurn()
	tests := []struct {
		name   string
		mutate func(r *Result)
		fails  bool
	}{
		{"as expected", func(r *Result) {}, false},
		{"no lock while n1 was paused", func(r *Result) { withoutHolds(r, 4*time.Second, 5*time.Second, 0) }, true},
		{"locks at under half the pace while n1 was paused", func(r *Result) { withoutHolds(r, 4*time.Second, 5*time.Second, 4) }, true},
		{"locks at over half the pace while n1 was paused", func(r *Result) { withoutHolds(r, 4*time.Second, 5*time.Second, 6) }, false},
		{"a Lock call waited out its bound", func(r *Result) {
			r.Record.Attempts = append(r.Record.Attempts, history.Attempt{Start: 0, End: lockWaitBound, Err: errors.Join(redlock.ErrNotObtained, context.DeadlineExceeded)})
		}, true},
		{"a Lock call failed otherwise", func(r *Result) {
			r.Record.Attempts = append(r.Record.Attempts, history.Attempt{Start: 0, End: time.Second, Err: redlock.ErrClosed})
		}, true},
		{"a Lock call ended by the run's end", func(r *Result) {
			r.Record.Attempts = append(r.Record.Attempts, history.Attempt{Start: 5 * time.Second, End: 6 * time.Second, Err: errors.Join(redlock.ErrNotObtained, context.Canceled)})
		}, false},
		{"an element lost", func(r *Result) { r.C2 = check.LostWrites{Acked: 10, Lost: 1} }, true},
		{"two holders", func(r *Result) { r.C1 = []check.Violation{{}} }, true},
	}
	for _, tt := range tests {
		r := lockChurnResult(s)
		tt.mutate(r)
		assert.Equal(t, tt.fails, len(s.Expect(r)) > 0, "%s: %v", tt.name, s.Expect(r))
	}
}

// doResult is a run of scenario 12 that went as expected: the first holder
// kept its lock on all five masters, the cut one was told before its
// validity ended, and the next holder is another client with a larger
// fence, after which the cut one's late write was rejected.
func doResult(s *Scenario) *Result {
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	r := &Result{Scenario: s, Live: check.Liveness{OK: true}, Marks: map[string]time.Duration{
		"first acquired": sec(1), "paused": sec(1.4), "unpaused": sec(4.4),
		"victim acquired": sec(7.1), "cut": sec(8.1), "validity bound": sec(9.8),
	}}
	r.Record.Holds = []history.Hold{
		{ID: 0, Client: 0, Fence: 10, Masters: []int{0, 1, 2, 3, 4}, Acquired: sec(1), Until: sec(7), Released: sec(7), Done: true, ByDo: true},
		{ID: 1, Client: 1, Fence: 12, Masters: []int{0, 1, 2, 3, 4}, Acquired: sec(7.1), Until: sec(9.6), Released: sec(9.9), Done: true, ByDo: true,
			Lost: true, ReleaseErr: redlock.ErrLockLost},
		{ID: 2, Client: 2, Fence: 13, Masters: []int{0, 1, 2}, Acquired: sec(9.85), Until: sec(12), Released: sec(12), Done: true, ByDo: true},
	}
	r.Record.Writes = []history.Write{
		{Seq: 0, Hold: 0, Client: 0, Fence: 10, At: sec(2), Accepted: true},
		{Seq: 1, Hold: 1, Client: 1, Fence: 12, At: sec(8), Accepted: true},
		{Seq: 2, Hold: 2, Client: 2, Fence: 13, At: sec(9.87), Accepted: true},
		{Seq: 3, Hold: 1, Client: 1, Fence: 12, At: sec(9.88), Accepted: false},
	}
	r.Record.Notes = []history.Note{{At: sec(9.6), Text: "client 1: redlock: lock lost key=chaos-12 fence=12 cause=no extension reached a quorum within the validity"}}
	return r
}

func TestExpectations_DoAutoExtend(t *testing.T) {
	s := doExtension()
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	tests := []struct {
		name   string
		mutate func(r *Result)
		fails  bool
	}{
		{"as expected", func(r *Result) {}, false},
		{"the first holder lost its lock", func(r *Result) {
			r.Record.Holds[0].Lost, r.Record.Holds[0].ReleaseErr = true, redlock.ErrLockLost
		}, true},
		{"the first holder held only part of the time", func(r *Result) { r.Record.Holds[0].Released = sec(4) }, true},
		{"the faults missed the first holder's masters", func(r *Result) { r.Record.Holds[0].Masters = []int{0, 1, 2} }, true},
		{"the cut holder was never told", func(r *Result) {
			r.Record.Holds[1].Lost, r.Record.Holds[1].ReleaseErr = false, nil
		}, true},
		{"the cut holder was told after its validity", func(r *Result) { r.Record.Holds[1].Until = sec(9.9) }, true},
		{"Do did not return ErrLockLost", func(r *Result) { r.Record.Holds[1].ReleaseErr = context.Canceled }, true},
		{"the next fence is not larger", func(r *Result) { r.Record.Holds[2].Fence = 12 }, true},
		{"the next holder is the same client", func(r *Result) { r.Record.Holds[2].Client = 1 }, true},
		{"the late write was accepted", func(r *Result) { r.Record.Writes[3].Accepted = true }, true},
		{"no late write", func(r *Result) { r.Record.Writes = r.Record.Writes[:3] }, true},
		{"the library did not report the loss", func(r *Result) { r.Record.Notes = nil }, true},
		{"no bound on the validity", func(r *Result) { delete(r.Marks, "validity bound") }, true},
	}
	for _, tt := range tests {
		r := doResult(s)
		tt.mutate(r)
		assert.Equal(t, tt.fails, len(s.Expect(r)) > 0, "%s: %v", tt.name, s.Expect(r))
	}
}

// clusterResult is a run of scenario 15 that went as expected with the
// guard on: the other shards' keys locked while the failed-over shards were
// out, the failed-over key went to another client afterwards, and the
// frozen holder's late write was refused.
func clusterResult(s *Scenario) *Result {
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	failed, other := s.Keys[0], s.Keys[1]
	r := &Result{Scenario: s, Live: check.Liveness{OK: true}, Marks: map[string]time.Duration{
		"n0 failed over": sec(3), "failed over": sec(5), "rejoined": sec(14),
	}}
	r.Record.Holds = []history.Hold{
		{ID: 0, Client: 0, Key: failed, Fence: 5, Acquired: sec(1), Until: sec(11), Released: sec(14.5), Caught: true, Done: true},
		{ID: 1, Client: 1, Key: other, Fence: 2, Acquired: sec(4), Until: sec(14), Released: sec(4.1), Done: true},
		{ID: 2, Client: 2, Key: other, Fence: 3, Acquired: sec(6), Until: sec(16), Released: sec(6.1), Done: true},
		{ID: 3, Client: 3, Key: other, Fence: 4, Acquired: sec(9), Until: sec(19), Released: sec(9.1), Done: true},
		{ID: 4, Client: 1, Key: failed, Fence: 9, Acquired: sec(14), Until: sec(24), Released: sec(14.1), Done: true},
	}
	r.Record.Writes = []history.Write{
		{Seq: 0, Hold: 4, Client: 1, Fence: 9, Accepted: true},
		{Seq: 1, Hold: 0, Client: 0, Fence: 5, Accepted: false},
	}
	return r
}

func TestExpectations_ClusterFailover(t *testing.T) {
	off, on := clusterFailovers()[0], clusterFailovers()[1]
	overlapOn := func(key string) []check.Violation {
		return []check.Violation{{Key: key, First: history.Hold{ID: 0, Key: key}, Second: history.Hold{ID: 1, Client: 1, Key: key}, Overlap: time.Second}}
	}
	tests := []struct {
		name   string
		s      *Scenario
		mutate func(r *Result)
		fails  bool
	}{
		{"guard off: two holders of the failed-over key", off, func(r *Result) { r.C1 = overlapOn(off.Keys[0]) }, false},
		{"guard off: no double holder", off, func(r *Result) { r.C1 = nil }, true},
		{"guard off: two holders of a spared shard's key", off, func(r *Result) { r.C1 = overlapOn(off.Keys[2]) }, true},
		{"guard on: as expected", on, func(r *Result) {}, false},
		{"guard on: two holders", on, func(r *Result) { r.C1 = overlapOn(on.Keys[0]) }, true},
		{"guard on: the late write accepted", on, func(r *Result) { r.Record.Writes[1].Accepted = true }, true},
		{"guard on: the other shards' keys did not lock", on, func(r *Result) { r.Record.Holds = r.Record.Holds[:2] }, true},
		{"guard on: the key never granted again", on, func(r *Result) { delete(r.Marks, "rejoined") }, true},
		{"guard on: no relock after the run", on, func(r *Result) { r.Live.OK = false }, true},
	}
	for _, tt := range tests {
		r := clusterResult(tt.s)
		tt.mutate(r)
		assert.Equal(t, tt.fails, len(tt.s.Expect(r)) > 0, "%s: %v", tt.name, tt.s.Expect(r))
	}
}

func TestWarmUpKey_SharesTheKeysSlot(t *testing.T) {
	for _, key := range []string{"chaos-01", "chaos-15b-0{abcde}", "{tag}x", "a}b", "x{}y"} {
		w := warmUpKey(key)
		assert.NotEqual(t, key, w)
		assert.Equal(t, slot.Of(key), slot.Of(w), "%s and %s", key, w)
	}
}

// queuedResult is a run of scenario 16 that went as expected: every mark,
// 100 locks, three Lock calls cut by kills, and C5 clean.
func queuedResult(s *Scenario) *Result {
	r := &Result{Scenario: s, Live: check.Liveness{OK: true}, Marks: map[string]time.Duration{}, C5: &check.Waits{Calls: 100}}
	for i, m := range []string{"kill 1", "n4 killed", "n4 restarted", "kill 2", "n2 cut", "kill 3", "n2 healed", "kill 4"} {
		r.Marks[m] = time.Duration(i+1) * time.Second
	}
	for i := range 100 {
		at := time.Duration(i) * 100 * time.Millisecond
		r.Record.Holds = append(r.Record.Holds, history.Hold{ID: i, Client: i % 8, Acquired: at, Until: at + time.Second, Released: at + 10*time.Millisecond})
		r.Record.Attempts = append(r.Record.Attempts, history.Attempt{Client: i % 8, Start: at - 40*time.Millisecond, End: at, OK: true})
	}
	for _, at := range []time.Duration{time.Second, 4 * time.Second, 6 * time.Second} {
		r.Record.Attempts = append(r.Record.Attempts, history.Attempt{Client: 1, Start: at - time.Second, End: at, Killed: true})
	}
	r.Locks, r.Attempts = len(r.Record.Holds), len(r.Record.Attempts)
	return r
}

func TestExpectations_QueuedWaiters(t *testing.T) {
	s := queuedWaiters()
	tests := []struct {
		name   string
		mutate func(r *Result)
		fails  bool
	}{
		{"as expected", func(r *Result) {}, false},
		{"a Lock call waited past its bound", func(r *Result) {
			r.C5.Stuck = []check.Judged{{Call: history.Attempt{Client: 3}, Waited: 2 * time.Second, Bound: time.Second}}
		}, true},
		{"a Lock call passed over by later ones", func(r *Result) {
			r.C5.Passed = []check.Judged{{Call: history.Attempt{Client: 3}, Waited: 200 * time.Millisecond, Bound: time.Second, Overtaken: 9}}
		}, true},
		{"the key free too long while someone waited", func(r *Result) {
			r.C5.Idle = []check.Gap{{Key: "chaos-16", From: time.Second, To: 5 * time.Second, Allowed: 2 * time.Second}}
		}, true},
		{"a Lock call failed otherwise", func(r *Result) {
			r.Record.Attempts = append(r.Record.Attempts, history.Attempt{Start: 0, End: time.Second, Err: redlock.ErrClosed})
		}, true},
		{"a Lock call ended by the run's end", func(r *Result) {
			r.Record.Attempts = append(r.Record.Attempts, history.Attempt{Start: 5 * time.Second, End: 6 * time.Second, Err: errors.Join(redlock.ErrNotObtained, context.Canceled)})
		}, false},
		{"the kills hit no waiter", func(r *Result) { r.Record.Attempts = r.Record.Attempts[:100] }, true},
		{"hardly any lock", func(r *Result) { r.Locks = 20 }, true},
		{"a mark missing", func(r *Result) { delete(r.Marks, "kill 4") }, true},
		{"two holders", func(r *Result) { r.C1 = []check.Violation{{}} }, true},
		{"an element lost", func(r *Result) { r.C2 = check.LostWrites{Acked: 10, Lost: 1} }, true},
	}
	for _, tt := range tests {
		r := queuedResult(s)
		tt.mutate(r)
		assert.Equal(t, tt.fails, len(s.Expect(r)) > 0, "%s: %v", tt.name, s.Expect(r))
	}
}

func TestExpectations_QueuedWaitersLongLease(t *testing.T) {
	s := queuedWaitersLongLease()
	behind := check.Gap{Key: "chaos-16a", From: time.Second, To: 8 * time.Second, Allowed: time.Second + queueIdle, Deaths: 1}
	tests := []struct {
		name   string
		mutate func(r *Result)
		fails  bool
	}{
		{"the key left free behind the dead waiter", func(r *Result) { r.C5.Idle = []check.Gap{behind} }, false},
		{"C5 clean", func(r *Result) {}, true},
		{"only a free stretch with every waiter alive", func(r *Result) {
			g := behind
			g.Deaths, g.Allowed = 0, g.From+queueLive
			r.C5.Idle = []check.Gap{g}
		}, true},
		{"only a call waiting past its bound", func(r *Result) {
			r.C5.Stuck = []check.Judged{{Call: history.Attempt{Client: 3}, Waited: 7 * time.Second, Bound: time.Second}}
		}, true},
		{"no kill", func(r *Result) { r.C5.Idle = []check.Gap{behind}; delete(r.Marks, "kill") }, true},
		{"two holders", func(r *Result) { r.C5.Idle = []check.Gap{behind}; r.C1 = []check.Violation{{}} }, true},
		{"no relock after the run", func(r *Result) { r.C5.Idle = []check.Gap{behind}; r.Live.OK = false }, false},
	}
	for _, tt := range tests {
		r := &Result{Scenario: s, Live: check.Liveness{OK: true}, Marks: map[string]time.Duration{"kill": time.Second}, C5: &check.Waits{Calls: 20}}
		tt.mutate(r)
		assert.Equal(t, tt.fails, len(s.Expect(r)) > 0, "%s: %v", tt.name, s.Expect(r))
	}
}

func TestQuorumDown_ReadsTheFaults(t *testing.T) {
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	s := &Scenario{Nodes: 5, TTL: time.Second, Guard: true}
	all := history.AllClients
	faults := []history.Fault{
		{Node: 4, Client: all, Kind: "killed", Start: sec(1), End: sec(2)},
		{Node: 4, Client: all, Kind: "restarted", Start: sec(2), End: sec(2)}, // out until 2 + 3.01
		{Node: 2, Client: all, Kind: "blackholed", Start: sec(4), End: sec(6)},
		{Node: 0, Client: all, Kind: "dead token", Start: sec(4.5), End: sec(5.5)},
		{Node: 1, Client: 3, Kind: "blackholed", Start: sec(0), End: sec(10)}, // one client's link only
		{Node: -1, Client: 3, Kind: "client killed", Start: sec(0), End: sec(10)},
		{Node: 3, Client: all, Kind: "paused", Start: sec(9)}, // still open at the end
		{Node: 1, Client: all, Kind: "rejected", Start: sec(9.5), End: sec(9.6)},
		{Node: 0, Client: all, Kind: "killed", Start: sec(9.2), End: sec(9.8)},
	}
	want := []check.Span{{From: sec(4.5), To: guardOut(time.Second) + sec(2)}, {From: sec(9.5), To: sec(9.6)}}
	assert.Equal(t, want, quorumDown(s, faults, sec(10)))

	s.Guard = false // a restarted master votes at once
	assert.Equal(t, []check.Span{{From: sec(9.5), To: sec(9.6)}}, quorumDown(s, faults, sec(10)))
}

// semaphoreResult is a run of scenario 17 that went as expected: permits
// granted throughout, some while n1 was paused.
func semaphoreResult(s *Scenario) *Result {
	r := &Result{Scenario: s, Live: check.Liveness{OK: true}, Marks: map[string]time.Duration{
		"paused": time.Second, "unpausing": 2 * time.Second, "restarted": 3 * time.Second,
	}}
	for i := range 60 {
		r.Record.Holds = append(r.Record.Holds, history.Hold{ID: i, Acquired: time.Duration(i) * 60 * time.Millisecond})
	}
	r.Locks = len(r.Record.Holds)
	return r
}

func TestExpectations_Semaphore(t *testing.T) {
	ss := semaphores()
	on, control := ss[0], ss[1]
	three := []check.Excess{{Key: "k", Holds: []history.Hold{{ID: 0}, {ID: 1, Client: 1}, {ID: 2, Client: 2}}}}
	tests := []struct {
		name   string
		s      *Scenario
		mutate func(r *Result)
		fails  bool
	}{
		{"as expected", on, func(r *Result) {}, false},
		{"three holders", on, func(r *Result) { r.C6 = three }, true},
		{"no permit while paused", on, func(r *Result) {
			r.Record.Holds = slices.DeleteFunc(r.Record.Holds, func(h history.Hold) bool {
				return h.Acquired >= time.Second && h.Acquired < 2*time.Second
			})
		}, true},
		{"a permit left behind", on, func(r *Result) { r.C4.Failed = []check.KeyState{{Key: "k"}} }, true},
		{"no permit after heal", on, func(r *Result) { r.Live.OK = false }, true},
		{"control fired", control, func(r *Result) { r.C6 = three }, false},
		{"control silent", control, func(r *Result) {}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := semaphoreResult(tt.s)
			tt.mutate(r)
			if got := tt.s.Expect(r); tt.fails {
				assert.NotEmpty(t, got)
			} else {
				assert.Empty(t, got)
			}
		})
	}
}

func TestExpectations_ReadersWriter(t *testing.T) {
	ss := readersWriters()
	on, control := ss[0], ss[1]
	beside := []check.Violation{{First: history.Hold{ID: 0, Shared: true}, Second: history.Hold{ID: 1, Client: 1}, Overlap: time.Millisecond}}
	result := func(s *Scenario) *Result {
		r := semaphoreResult(s)
		for i := range r.Record.Holds {
			r.Record.Holds[i].Shared = i%4 != 0
		}
		return r
	}
	tests := []struct {
		name   string
		s      *Scenario
		mutate func(r *Result)
		fails  bool
	}{
		{"as expected", on, func(r *Result) {}, false},
		{"a writer beside a reader", on, func(r *Result) { r.C7 = beside }, true},
		{"no writes", on, func(r *Result) {
			for i := range r.Record.Holds {
				r.Record.Holds[i].Shared = true
			}
		}, true},
		{"no hold while paused", on, func(r *Result) {
			r.Record.Holds = slices.DeleteFunc(r.Record.Holds, func(h history.Hold) bool {
				return h.Acquired >= time.Second && h.Acquired < 2*time.Second
			})
		}, true},
		{"no hold after heal", on, func(r *Result) { r.Live.OK = false }, true},
		{"control fired", control, func(r *Result) { r.C7 = beside }, false},
		{"control silent", control, func(r *Result) {}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := result(tt.s)
			tt.mutate(r)
			if got := tt.s.Expect(r); tt.fails {
				assert.NotEmpty(t, got)
			} else {
				assert.Empty(t, got)
			}
		})
	}
}

func TestExpectations_KeySets(t *testing.T) {
	ss := keySets()
	on, control := ss[0], ss[1]
	overlap := []check.Violation{{First: history.Hold{ID: 0, Key: "a"}, Second: history.Hold{ID: 1, Client: 1, Key: "a"}, Overlap: time.Millisecond}}
	result := func(s *Scenario) *Result {
		r := semaphoreResult(s)
		for i := range r.Record.Holds {
			r.Record.Holds[i].Token = strconv.Itoa(i)
		}
		return r
	}
	tests := []struct {
		name   string
		s      *Scenario
		mutate func(r *Result)
		fails  bool
	}{
		{"as expected", on, func(r *Result) {}, false},
		{"two holders of a key", on, func(r *Result) { r.C1 = overlap }, true},
		{"no set while paused: stuck", on, func(r *Result) {
			r.Record.Holds = slices.DeleteFunc(r.Record.Holds, func(h history.Hold) bool {
				return h.Acquired >= time.Second && h.Acquired < 2*time.Second
			})
		}, true},
		{"no set after the restart: stuck", on, func(r *Result) {
			r.Record.Holds = slices.DeleteFunc(r.Record.Holds, func(h history.Hold) bool { return h.Acquired >= 3*time.Second })
		}, true},
		{"no lock after heal", on, func(r *Result) { r.Live.OK = false }, true},
		{"control fired", control, func(r *Result) { r.C1 = overlap }, false},
		{"control silent", control, func(r *Result) {}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := result(tt.s)
			tt.mutate(r)
			if got := tt.s.Expect(r); tt.fails {
				assert.NotEmpty(t, got)
			} else {
				assert.Empty(t, got)
			}
		})
	}
}
