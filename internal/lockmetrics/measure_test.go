package lockmetrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quorumlock/quorumlock/redlock"
)

// measured renders what Measure records for ev, one line per measurement.
func measured(ev redlock.Event) []string {
	cat := Catalogue()
	var out []string
	Measure(ev, func(id ID, v float64, attrs ...Attr) {
		out = append(out, fmt.Sprintf("%s %v %v", cat[id].Name, v, attrs))
		if len(attrs) != len(cat[id].Attrs) {
			out = append(out, "WRONG ATTRIBUTES")
		}
		for i, a := range attrs {
			if i < len(cat[id].Attrs) && a.Key != cat[id].Attrs[i] {
				out = append(out, "WRONG ATTRIBUTE "+a.Key)
			}
		}
	})
	return out
}

func TestMeasure(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   redlock.Event
		want []string
	}{
		{"attempt obtained", redlock.Event{Kind: redlock.KindAttempt, Key: "k", Outcome: redlock.OutcomeObtained, Duration: 2 * time.Millisecond}, []string{
			"quorumlock.lock.attempts 1 [{quorumlock.outcome obtained}]",
			"quorumlock.lock.acquire.duration 0.002 [{quorumlock.outcome obtained}]",
			"quorumlock.lock.held 1 []",
		}},
		{"attempt held", redlock.Event{Kind: redlock.KindAttempt, Outcome: redlock.OutcomeHeld, Duration: time.Millisecond}, []string{
			"quorumlock.lock.attempts 1 [{quorumlock.outcome held}]",
			"quorumlock.lock.acquire.duration 0.001 [{quorumlock.outcome held}]",
		}},
		{"lock call", redlock.Event{Kind: redlock.KindCall, Op: redlock.OpLock, Outcome: redlock.OutcomeCtxDone, Duration: time.Second}, []string{
			"quorumlock.lock.wait.duration 1 [{quorumlock.operation lock} {quorumlock.outcome ctx_done}]",
		}},
		{"read hold's call", redlock.Event{Kind: redlock.KindCall, Op: redlock.OpTryRLock, Outcome: redlock.OutcomeHeld, Duration: time.Second}, []string{
			"quorumlock.lock.wait.duration 1 [{quorumlock.operation tryrlock} {quorumlock.outcome held}]",
		}},
		{"permit's call", redlock.Event{Kind: redlock.KindCall, Op: redlock.OpAcquire, Outcome: redlock.OutcomeObtained, Duration: time.Second}, []string{
			"quorumlock.lock.wait.duration 1 [{quorumlock.operation acquire} {quorumlock.outcome obtained}]",
		}},
		{"lockall call", redlock.Event{Kind: redlock.KindCall, Op: redlock.OpLockAll, Outcome: redlock.OutcomeObtained, Duration: time.Second}, []string{
			"quorumlock.lock.wait.duration 1 [{quorumlock.operation lockall} {quorumlock.outcome obtained}]",
		}},
		{"release", redlock.Event{Kind: redlock.KindCall, Op: redlock.OpRelease, Outcome: redlock.OutcomeReleased, Held: 3 * time.Second}, []string{
			"quorumlock.lock.releases 1 [{quorumlock.outcome released}]",
			"quorumlock.lock.held -1 []",
			"quorumlock.lock.held.duration 3 []",
		}},
		{"resume", redlock.Event{Kind: redlock.KindCall, Op: redlock.OpResume, Outcome: redlock.OutcomeObtained}, []string{
			"quorumlock.lock.held 1 []",
		}},
		{"resume of a lock not held", redlock.Event{Kind: redlock.KindCall, Op: redlock.OpResume, Outcome: redlock.OutcomeNotHeld}, nil},
		{"release of a lock lost before", redlock.Event{Kind: redlock.KindCall, Op: redlock.OpRelease, Outcome: redlock.OutcomeLost}, []string{
			"quorumlock.lock.releases 1 [{quorumlock.outcome lost}]",
		}},
		{"extend call: its KindExtend counts", redlock.Event{Kind: redlock.KindCall, Op: redlock.OpExtend, Outcome: redlock.OutcomeExtended}, nil},
		{"auto extension", redlock.Event{Kind: redlock.KindExtend, Outcome: redlock.OutcomeExtended, Auto: true}, []string{
			"quorumlock.lock.extensions 1 [{quorumlock.outcome extended} {quorumlock.auto true}]",
		}},
		{"lost", redlock.Event{Kind: redlock.KindLost, Key: "k"}, []string{
			"quorumlock.lock.losses 1 []",
			"quorumlock.lock.held -1 []",
		}},
		{"hand-over", redlock.Event{Kind: redlock.KindHandOver, Outcome: redlock.OutcomeHandedOver}, []string{
			"quorumlock.lock.handovers 1 [{quorumlock.outcome handed_over}]",
		}},
		{"wake", redlock.Event{Kind: redlock.KindWake, Outcome: redlock.OutcomeTimer}, []string{
			"quorumlock.lock.wakeups 1 [{quorumlock.outcome timer}]",
		}},
		{"fence raise", redlock.Event{Kind: redlock.KindFenceRaise, Outcome: redlock.OutcomeRaised, Fence: 7}, []string{
			"quorumlock.fence.raises 1 [{quorumlock.outcome raised}]",
		}},
		{"master", redlock.Event{Kind: redlock.KindMaster, Master: "a:1", State: redlock.MasterDown, Reason: "no reply"}, []string{
			"quorumlock.master.changes 1 [{quorumlock.master.address a:1} {quorumlock.master.state down} {quorumlock.master.reason no reply}]",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, measured(tc.ev))
		})
	}
}

// The gauges: each master's state of the four, silent above its
// connection's state, and its quarantine until it ends.
func TestMasters(t *testing.T) {
	now := time.Now()
	var ms Masters
	for _, ev := range []redlock.Event{
		{Kind: redlock.KindMaster, Master: "a", State: redlock.MasterVoting},
		{Kind: redlock.KindMaster, Master: "b", State: redlock.MasterDown, Reason: "no reply"},
		{Kind: redlock.KindMaster, Master: "b", State: redlock.MasterSilent},
		{Kind: redlock.KindMaster, Master: "c", State: redlock.MasterQuarantined, Until: now.Add(time.Minute)},
		{Kind: redlock.KindMaster, Master: "d", State: redlock.MasterQuarantined, Until: now.Add(-time.Second)},
		{Kind: redlock.KindMaster, Master: "e", State: redlock.MasterQuarantined, Reason: "replica"},
		{Kind: redlock.KindMaster, Master: "f", State: redlock.MasterFailing, Reason: "NOPERM"},
		{Kind: redlock.KindAttempt, Outcome: redlock.OutcomeHeld},
	} {
		ms.Note(ev)
	}
	state := map[string]redlock.MasterState{}
	quar := map[string]float64{}
	ms.Observe(now, func(id ID, v float64, attrs ...Attr) {
		switch id {
		case MasterState:
			if v == 1 {
				state[attrs[0].Value] = redlock.MasterState(attrs[1].Value)
			}
		case MasterQuarantined:
			quar[attrs[0].Value] = v
		}
	})
	assert.Equal(t, map[string]redlock.MasterState{"a": "up", "b": "silent", "c": "up", "d": "up", "e": "up", "f": "failing"}, state)
	assert.Equal(t, map[string]float64{"a": 0, "b": 0, "c": 1, "d": 0, "e": 1, "f": 0}, quar)
}
