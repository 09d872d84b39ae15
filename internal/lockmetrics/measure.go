package lockmetrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// Attr is one attribute of a measurement.
type Attr struct{ Key, Value string }

// Measure turns an event into measurements of the catalogue's counters,
// up-down counters and histograms (a histogram's value in seconds), each
// with its attributes in the order the instrument lists them. The gauges
// come from Masters instead.
func Measure(ev redlock.Event, rec func(id ID, v float64, attrs ...Attr)) {
	outcome := Attr{AttrOutcome, string(ev.Outcome)}
	switch ev.Kind {
	case redlock.KindAttempt:
		rec(Attempts, 1, outcome)
		rec(AcquireDuration, ev.Duration.Seconds(), outcome)
		if ev.Outcome == redlock.OutcomeObtained {
			rec(Held, 1)
		}
	case redlock.KindCall:
		switch ev.Op {
		case redlock.OpLock, redlock.OpTryLock, redlock.OpRLock, redlock.OpTryRLock, redlock.OpAcquire, redlock.OpTryAcquire,
			redlock.OpLockAll, redlock.OpTryLockAll:
			rec(WaitDuration, ev.Duration.Seconds(), Attr{AttrOperation, string(ev.Op)}, outcome)
		case redlock.OpResume:
			// A resumed lock is held here from now on: its release or
			// loss counts down as an acquired one's does.
			if ev.Outcome == redlock.OutcomeObtained {
				rec(Held, 1)
			}
		case redlock.OpRelease:
			rec(Releases, 1, outcome)
			if ev.Outcome == redlock.OutcomeReleased || ev.Outcome == redlock.OutcomeHandedOver {
				rec(Held, -1)
				rec(HeldDuration, ev.Held.Seconds())
			}
		}
	case redlock.KindExtend:
		rec(Extensions, 1, outcome, Attr{AttrAuto, strconv.FormatBool(ev.Auto)})
	case redlock.KindLost:
		rec(Losses, 1)
		rec(Held, -1)
	case redlock.KindHandOver:
		rec(Handovers, 1, outcome)
	case redlock.KindWake:
		rec(Wakeups, 1, outcome)
	case redlock.KindFenceRaise:
		rec(FenceRaises, 1, outcome)
	case redlock.KindMaster:
		rec(MasterChanges, 1, Attr{AttrMaster, ev.Master}, Attr{AttrState, string(ev.State)}, Attr{AttrReason, ev.Reason})
	}
}

// States are the values of the master state gauge's state attribute: each
// master reports 1 for its state and 0 for the others.
func States() []redlock.MasterState {
	return []redlock.MasterState{redlock.MasterUp, redlock.MasterDown, redlock.MasterFailing, redlock.MasterSilent}
}

// Masters keeps what the events said last of each master, for the gauges.
// It is safe for concurrent use.
type Masters struct {
	mu sync.Mutex
	by map[string]*masterView
}

// masterView is what the events said last of one master.
type masterView struct {
	conn   redlock.MasterState // MasterUp, MasterDown or MasterFailing
	silent bool
	quar   bool      // quarantined
	until  time.Time // the quarantine's end, when known
}

// Note records a KindMaster event; others change nothing.
func (ms *Masters) Note(ev redlock.Event) {
	if ev.Kind != redlock.KindMaster {
		return
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.by == nil {
		ms.by = map[string]*masterView{}
	}
	m := ms.by[ev.Master]
	if m == nil {
		m = &masterView{conn: redlock.MasterUp}
		ms.by[ev.Master] = m
	}
	switch ev.State {
	case redlock.MasterUp, redlock.MasterDown, redlock.MasterFailing:
		m.conn = ev.State
	case redlock.MasterSilent:
		m.silent = true
	case redlock.MasterHeard:
		m.silent = false
	case redlock.MasterQuarantined:
		m.quar, m.until = true, ev.Until
	case redlock.MasterVoting:
		m.quar, m.until = false, time.Time{}
	}
}

// Observe reports the gauges at now: for each master seen, MasterState
// for each of States (1 for its state, 0 for the others), and
// MasterQuarantined (1 while quarantined).
func (ms *Masters) Observe(now time.Time, rec func(id ID, v float64, attrs ...Attr)) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for addr, m := range ms.by {
		state := m.conn
		if m.silent {
			state = redlock.MasterSilent
		}
		for _, s := range States() {
			v := 0.0
			if s == state {
				v = 1
			}
			rec(MasterState, v, Attr{AttrMaster, addr}, Attr{AttrState, string(s)})
		}
		q := 0.0
		if m.quar && (m.until.IsZero() || now.Before(m.until)) {
			q = 1
		}
		rec(MasterQuarantined, q, Attr{AttrMaster, addr})
	}
}
