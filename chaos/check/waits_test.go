package check

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// The bounds scenario 16 uses, with the design's lease of 2 s.
var queueBounds = WaitBounds{Lease: 2 * time.Second, Idle: 3500 * ms, Live: time.Second, Handoff: 100 * ms, Skew: 50 * ms, Overtakes: 2}

// line builds a history of Lock calls on key "k": each call is a client,
// its start, and whether it was killed (then it ends at kill) or got the
// lock; grants are made one after the other in the order given by order,
// each hold lasting hold, with handoff between a release and the next
// grant, starting at first.
type line struct {
	attempts []history.Attempt
	holds    []history.Hold
}

func (l *line) call(client int, start time.Duration) int {
	l.attempts = append(l.attempts, history.Attempt{Client: client, Key: "k", Start: start, Token: fmt.Sprintf("t%d", len(l.attempts))})
	return len(l.attempts) - 1
}

// grant ends call i with the lock at t, held for d.
func (l *line) grant(i int, t, d time.Duration) time.Duration {
	a := &l.attempts[i]
	a.End, a.OK = t, true
	l.holds = append(l.holds, history.Hold{ID: len(l.holds), Client: a.Client, Key: "k", Token: a.Token, Acquired: t, Until: t + time.Second, Released: t + d})
	return t + d
}

// kill ends call i with its process killed at t.
func (l *line) kill(i int, t time.Duration) {
	a := &l.attempts[i]
	a.End, a.Killed = t, true
}

func TestWaiting_FairLineMeetsItsBounds(t *testing.T) {
	// Eight clients all waiting; each is served in the order it joined,
	// every hold 20 ms, every handoff 5 ms; each client comes back at once.
	var l line
	var queue []int
	for c := range 8 {
		queue = append(queue, l.call(c, time.Duration(c)*ms))
	}
	at := 10 * ms
	for range 40 {
		i := queue[0]
		queue = queue[1:]
		at = l.grant(i, at, 20*ms) + 5*ms
		queue = append(queue, l.call(l.attempts[i].Client, at-4*ms))
	}
	for _, i := range queue { // cancelled by the end of the run
		l.attempts[i].End = at
	}
	w := Waiting(l.attempts, l.holds, nil, queueBounds)
	assert.True(t, w.OK(), "stuck %+v idle %+v", w.Stuck, w.Idle)
	assert.Equal(t, 48, w.Calls)
	assert.Zero(t, w.MostOvertaken.Overtaken)
	assert.Equal(t, 10*ms, w.LongestIdle.Length(), "before the first grant")
	// A call that joined behind seven waits for about seven holds; the
	// one that joined 25 ms after it, within Skew, may be ahead of it too.
	assert.InDelta(t, float64(7*25*ms), float64(w.Longest.Waited), float64(10*ms))
	assert.Equal(t, 7+1, w.Longest.Ahead)
}

func TestWaiting_HerdFiresOnTheCallThatKeepsLosing(t *testing.T) {
	// Client 0 waits from the start while three others take the key in
	// turn, each coming back at once and winning again, 30 times.
	var l line
	victim := l.call(0, 0)
	others := []int{l.call(1, ms), l.call(2, 2*ms), l.call(3, 3*ms)}
	at := 5 * ms
	for n := range 60 {
		i := others[n%3]
		at = l.grant(i, at, 20*ms) + 5*ms
		others[n%3] = l.call(l.attempts[i].Client, at-4*ms)
	}
	l.grant(victim, at, 20*ms)
	// The others' last calls end with the run.
	for _, i := range others {
		l.attempts[i].End = at + 20*ms
	}
	w := Waiting(l.attempts, l.holds, nil, queueBounds)
	require.Len(t, w.Stuck, 1, "stuck %+v", w.Stuck)
	s := w.Stuck[0]
	assert.Equal(t, 0, s.Call.Client)
	// The three, and the first to come back, 26 ms after it started.
	assert.Equal(t, 4, s.Ahead)
	// Allowed: five holds of 20 ms and five handoffs of 100 ms.
	assert.Equal(t, 5*20*ms+5*100*ms, s.Bound)
	assert.Equal(t, at, s.Waited)
	assert.Equal(t, 56, s.Overtaken, "all but the first four calls")
	assert.Equal(t, s, w.MostOvertaken)
	assert.Equal(t, []Judged{s}, w.Passed)
	assert.Equal(t, 1, w.Overtaken)
	assert.Empty(t, w.Idle, "a herd keeps the key busy")
}

func TestWaiting_HerdWithShortHoldsStaysInTimeButPassesOver(t *testing.T) {
	// The same herd with holds of 2 ms, 40 rounds: client 0 waits 285 ms,
	// well within its places of 100 ms, but calls that came long after it
	// were served first.
	var l line
	victim := l.call(0, 0)
	others := []int{l.call(1, ms), l.call(2, 2*ms), l.call(3, 3*ms)}
	at := 5 * ms
	for n := range 40 {
		i := others[n%3]
		at = l.grant(i, at, 2*ms) + 5*ms
		others[n%3] = l.call(l.attempts[i].Client, at-4*ms)
	}
	l.grant(victim, at, 2*ms)
	for _, i := range others {
		l.attempts[i].End = at + 2*ms
	}
	w := Waiting(l.attempts, l.holds, nil, queueBounds)
	assert.Empty(t, w.Stuck)
	require.Len(t, w.Passed, 1)
	assert.Equal(t, 0, w.Passed[0].Call.Client)
	p := w.Passed[0]
	assert.Equal(t, 285*ms, p.Waited)
	// Ahead: the three, and the six calls that came back within Skew.
	assert.Equal(t, 3+6, p.Ahead)
	assert.Equal(t, 40-3-6, p.Overtaken, "all but the calls ahead")
	assert.False(t, w.OK())

	// With Overtakes at 31 it passes.
	b := queueBounds
	b.Overtakes = 31
	assert.True(t, Waiting(l.attempts, l.holds, nil, b).OK())
}

func TestWaiting_DeadHeadStallsWithinItsLeaseOrFires(t *testing.T) {
	for _, tt := range []struct {
		name  string
		stall time.Duration // from the release to the next grant
		fires bool
	}{
		{"lease expiry and a heartbeat: 4L/3", 2667 * ms, false},
		{"a line whose places never expire", 6 * time.Second, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var l line
			holder := l.call(0, 0)
			head := l.call(1, 10*ms)
			next := l.call(2, 20*ms)
			released := l.grant(holder, 5*ms, 100*ms)
			l.kill(head, 50*ms) // dies while the holder holds
			l.grant(next, released+tt.stall, 20*ms)
			w := Waiting(l.attempts, l.holds, nil, queueBounds)
			assert.Equal(t, tt.stall, w.LongestIdle.Length())
			assert.Equal(t, 50*ms+3500*ms, w.LongestIdle.Allowed, "Idle from the death")
			assert.Equal(t, 1, w.LongestIdle.Deaths)
			j := w.Longest
			assert.Equal(t, 2, j.Call.Client)
			assert.Equal(t, 1, j.Deaths)
			assert.Equal(t, 1, j.Ahead, "the dead head; the holder's call had ended")
			if tt.fires {
				require.Len(t, w.Idle, 1)
				assert.Equal(t, Gap{Key: "k", From: released, To: released + tt.stall, Allowed: 3550 * ms, Deaths: 1}, w.Idle[0])
				require.Len(t, w.Stuck, 1)
			} else {
				assert.True(t, w.OK(), "stuck %+v idle %+v", w.Stuck, w.Idle)
			}
		})
	}
}

func TestWaiting_GapAllowanceRunsFromTheDeaths(t *testing.T) {
	// The key is free from 100 ms, with every waiter alive. A waiter that
	// dies within the first second of it extends the allowance to Idle
	// after its death; one that dies later comes after a stall of live
	// waiters, which fires.
	for _, tt := range []struct {
		name         string
		death, grant time.Duration
		allowed      time.Duration
		fires        bool
	}{
		{"a death within Live: Idle from it", 800 * ms, 4200 * ms, 4300 * ms, false},
		{"a death within Live, served too late", 800 * ms, 4500 * ms, 4300 * ms, true},
		{"a death after a live stall of over Live", 2 * time.Second, 2100 * ms, 1100 * ms, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var l line
			holder := l.call(0, 0)
			dead := l.call(1, 10*ms)
			next := l.call(2, 20*ms)
			released := l.grant(holder, 0, 100*ms)
			l.kill(dead, tt.death)
			l.grant(next, tt.grant, 20*ms)
			w := Waiting(l.attempts, l.holds, nil, queueBounds)
			assert.Equal(t, released, w.LongestIdle.From)
			assert.Equal(t, tt.allowed, w.LongestIdle.Allowed)
			assert.Equal(t, tt.fires, len(w.Idle) > 0)
		})
	}
}

func TestWaiting_LiveWaitersStalledFires(t *testing.T) {
	// Three live waiters, the key free for 1.2 s after a release, nobody
	// dead: the head's next try is a heartbeat away at most.
	var l line
	holder := l.call(0, 0)
	a, b := l.call(1, 10*ms), l.call(2, 20*ms)
	released := l.grant(holder, 0, 20*ms)
	done := l.grant(a, released+1200*ms, 20*ms)
	l.grant(b, done+3*ms, 20*ms)
	w := Waiting(l.attempts, l.holds, nil, queueBounds)
	require.Len(t, w.Idle, 1)
	assert.Equal(t, Gap{Key: "k", From: released, To: released + 1200*ms, Allowed: released + time.Second}, w.Idle[0])
	assert.Equal(t, 200*ms, w.Idle[0].Over())
	// Within Live it passes.
	bs := queueBounds
	bs.Live = 1300 * ms
	assert.Empty(t, Waiting(l.attempts, l.holds, nil, bs).Idle)
}

func TestWaiting_TimeWithoutQuorumIsNotCounted(t *testing.T) {
	var l line
	holder := l.call(0, 0)
	next := l.call(1, 10*ms)
	released := l.grant(holder, 0, 100*ms)
	l.grant(next, 7800*ms, 20*ms)
	down := []Span{{200 * ms, 7 * time.Second}}

	w := Waiting(l.attempts, l.holds, down, queueBounds)
	assert.True(t, w.OK(), "stuck %+v idle %+v", w.Stuck, w.Idle)
	assert.Equal(t, 7800*ms-10*ms-(7*time.Second-200*ms), w.Longest.Waited)
	assert.Equal(t, 1, w.Longest.Recoveries)
	assert.Equal(t, 800*ms, w.LongestIdle.Length(), "from the quorum's return to the grant")

	// With the quorum up throughout, the same history fires both ways.
	w = Waiting(l.attempts, l.holds, nil, queueBounds)
	require.Len(t, w.Idle, 1)
	assert.Equal(t, released, w.Idle[0].From)
	require.Len(t, w.Stuck, 1)
}

func TestWaiting_KilledHolderIsPaidAsItsHold(t *testing.T) {
	// The holder is killed at once; its hold lasts until its validity
	// ends, 1 s, and the next waiter is served just after.
	var l line
	holder := l.call(0, 0)
	next := l.call(1, 10*ms)
	l.grant(holder, 5*ms, 0)
	l.holds[0].Released = 0 // never released
	l.grant(next, 5*ms+time.Second+30*ms, 20*ms)
	w := Waiting(l.attempts, l.holds, nil, queueBounds)
	assert.True(t, w.OK(), "stuck %+v idle %+v", w.Stuck, w.Idle)
	assert.Equal(t, 30*ms, w.LongestIdle.Length())
}

func TestWaiting_CallsWithinSkewCountAsAhead(t *testing.T) {
	// b starts 30 ms after a but may hold the smaller ticket; it is served
	// first. a's bound counts it.
	var l line
	a := l.call(0, 0)
	b := l.call(1, 30*ms)
	done := l.grant(b, 40*ms, 20*ms)
	l.grant(a, done+5*ms, 20*ms)
	w := Waiting(l.attempts, l.holds, nil, queueBounds)
	assert.True(t, w.OK())
	assert.Equal(t, 1, w.Longest.Ahead)
	assert.Zero(t, w.MostOvertaken.Overtaken)

	// Past the skew it is an overtake, reported, and the wait is judged
	// without it.
	l = line{}
	a = l.call(0, 0)
	b = l.call(1, 500*ms)
	done = l.grant(b, 510*ms, 20*ms)
	l.grant(a, done+5*ms, 20*ms)
	w = Waiting(l.attempts, l.holds, nil, queueBounds)
	assert.Equal(t, 1, w.MostOvertaken.Overtaken)
	assert.Equal(t, 0, w.MostOvertaken.Ahead)
	assert.Empty(t, w.Passed, "one overtake is within the allowance")
	require.Len(t, w.Stuck, 1, "535 ms against one handoff and one hold of 20 ms")
}

func TestWaiting_KeysAreJudgedApart(t *testing.T) {
	var l line
	holder := l.call(0, 0)
	l.grant(holder, 0, 5*time.Second)
	// A waiter on another key, free all along, served at once.
	l.attempts = append(l.attempts, history.Attempt{Client: 1, Key: "other", Start: 10 * ms, End: 12 * ms, OK: true, Token: "o"})
	l.holds = append(l.holds, history.Hold{ID: 1, Client: 1, Key: "other", Token: "o", Acquired: 12 * ms, Until: time.Second, Released: 30 * ms})
	w := Waiting(l.attempts, l.holds, nil, queueBounds)
	assert.True(t, w.OK(), "stuck %+v idle %+v", w.Stuck, w.Idle)
	assert.Equal(t, 2, w.Calls)
}

func TestQuorumDown(t *testing.T) {
	s := func(from, to time.Duration) Span { return Span{from * ms, to * ms} }
	o := func(node int, from, to time.Duration) Outage { return Outage{node, s(from, to)} }
	tests := []struct {
		name    string
		outages []Outage
		want    []Span
	}{
		{name: "nothing out"},
		{name: "two of five out at once: a quorum is left", outages: []Outage{o(0, 0, 100), o(1, 50, 150)}},
		{
			name:    "three out at once",
			outages: []Outage{o(0, 0, 100), o(1, 50, 150), o(2, 80, 120)},
			want:    []Span{s(80, 100)},
		},
		{
			name:    "one master's overlapping outages count once",
			outages: []Outage{o(0, 0, 100), o(0, 50, 150), o(1, 60, 70)},
		},
		{
			name:    "touching outages of a third master do not overlap",
			outages: []Outage{o(0, 0, 100), o(1, 0, 100), o(2, 100, 200), o(3, 150, 160)},
			want:    nil,
		},
		{
			name:    "two stretches, merged where they touch",
			outages: []Outage{o(0, 0, 300), o(1, 0, 300), o(2, 10, 20), o(3, 20, 30), o(4, 200, 250)},
			want:    []Span{s(10, 30), s(200, 250)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, QuorumDown(5, 3, tt.outages))
		})
	}
}

func TestSubtract(t *testing.T) {
	s := func(from, to time.Duration) Span { return Span{from, to} }
	assert.Equal(t, []Span{s(0, 10), s(20, 30), s(40, 50)},
		subtract([]Span{s(0, 50)}, []Span{s(10, 20), s(30, 40)}))
	assert.Equal(t, []Span{s(5, 10), s(60, 70)},
		subtract([]Span{s(0, 10), s(50, 70)}, []Span{s(-5, 5), s(40, 60)}))
	assert.Empty(t, subtract([]Span{s(0, 10)}, []Span{s(0, 10)}))
	assert.Equal(t, []Span{s(0, 10)}, subtract([]Span{s(0, 10)}, nil))
}
