package redlock

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// CheckLevel grades a Finding of Check.
type CheckLevel int8

const (
	// CheckOK is a finding that needs nothing done.
	CheckOK CheckLevel = iota
	// CheckWarn is a finding that leaves locking working, with a limit
	// worth knowing or fixing: a master that votes only later, waiters
	// that fall back to polling, an unsynchronised clock.
	CheckWarn
	// CheckFail is a finding that keeps the master from voting, or its
	// lock scripts from running, until it is fixed.
	CheckFail
)

// String returns "ok", "warn" or "fail".
func (l CheckLevel) String() string {
	switch l {
	case CheckOK:
		return "ok"
	case CheckWarn:
		return "warn"
	case CheckFail:
		return "fail"
	}
	return fmt.Sprintf("level(%d)", int8(l))
}

// Finding is one thing Check found about one master.
type Finding struct {
	// Topic is what the finding is about: "reach", "version", "role",
	// "readable", "persistence", "eviction", "acl", "scripts", "pubsub", "cleanup",
	// "uptime" or "clock".
	Topic string
	// Level grades it.
	Level CheckLevel
	// Text says what was found, in one line.
	Text string
	// Fix says what to do about it; "" when nothing needs doing.
	Fix string
}

// MasterReadiness is what Check found about one master.
type MasterReadiness struct {
	// Node is the master's index in the list the client was given.
	Node int
	// Addr is the master's address.
	Addr string
	// Findings are in the order the master was probed.
	Findings []Finding
	// VotesIn is how long until the restart guard lets a master that
	// started recently vote; 0 when it votes now (or cannot vote at all:
	// see Findings).
	VotesIn time.Duration
	// Offset is the master's clock (Redis TIME) minus the client's, read
	// at the middle of the round trip RTT; both are 0 when not measured.
	Offset, RTT time.Duration
	// Residue lists keys the check wrote and could not delete.
	Residue []string
}

// Ready reports whether nothing found about the master is a CheckFail.
func (m *MasterReadiness) Ready() bool {
	for _, f := range m.Findings {
		if f.Level == CheckFail {
			return false
		}
	}
	return true
}

// add records a finding.
func (m *MasterReadiness) add(topic string, level CheckLevel, text, fix string) {
	m.Findings = append(m.Findings, Finding{Topic: topic, Level: level, Text: text, Fix: fix})
}

// Readiness is what Check found about every master.
type Readiness struct {
	// Quorum is how many masters must vote for a lock.
	Quorum int
	// TTL is the lock TTL the masters were judged for.
	TTL time.Duration
	// Window is the restart guard's window for TTL: how long a master
	// that restarted stays out of the quorum. 0 when the guard is off.
	Window time.Duration
	// Reserve is the drift reserve for TTL, Factor*TTL+Margin, which the
	// clock offsets are judged against.
	Reserve time.Duration
	// Masters holds each master's findings, in the order the client was
	// given the masters.
	Masters []MasterReadiness
}

// Ready reports whether locking works: at least a quorum of masters
// passed every check that blocks a vote.
func (r *Readiness) Ready() bool { return r.ready() >= r.Quorum }

func (r *Readiness) ready() int {
	n := 0
	for i := range r.Masters {
		if r.Masters[i].Ready() {
			n++
		}
	}
	return n
}

// Summary says in one line whether locking works, and what holds it back.
func (r *Readiness) Summary() string {
	n := r.ready()
	later := time.Duration(0)
	young := 0
	for i := range r.Masters {
		if m := &r.Masters[i]; m.Ready() && m.VotesIn > 0 {
			young++
			later = max(later, m.VotesIn)
		}
	}
	if n < r.Quorum {
		return fmt.Sprintf("NOT READY: %d of %d masters pass, the quorum is %d; fix the failures above", n, len(r.Masters), r.Quorum)
	}
	s := fmt.Sprintf("READY: %d of %d masters pass, the quorum is %d", n, len(r.Masters), r.Quorum)
	if n-young < r.Quorum {
		s += fmt.Sprintf("; %d vote only once up for the guard window: locks are granted in %v at the latest", young, later.Round(time.Second))
	}
	return s
}

// CheckParams says what Check judges the masters for.
type CheckParams struct {
	// TTL is the longest TTL the lock's users take: the restart guard's
	// window and the drift reserve follow from it. Must be positive, at
	// most MaxTTL, and longer than its drift reserve, as a lock's TTL.
	TTL time.Duration
	// KeyPrefix starts the throwaway lock key the check locks and
	// releases, inside the client's namespace; a random suffix follows.
	// Without a namespace, make it a key the lock's ACL user may lock.
	// It must not start with the reserved prefix "quorumlock:". Default
	// "redlock-check:".
	KeyPrefix string
}

// DefaultCheckKeyPrefix is CheckParams.KeyPrefix's default.
const DefaultCheckKeyPrefix = "redlock-check:"

// Check probes every master, as a readiness check before locking: whether
// it answers, its version and role, whether the restart guard can read its
// INFO and CONFIG, its persistence and eviction policy, whether the
// connecting user may run every command, key and channel the lock uses,
// its uptime against the guard window, and its clock against the client's.
// It runs the lock's own scripts on a throwaway key below the namespace,
// as a lock would (the master's fence floor moves up as on any grant), and
// deletes what they wrote; see MasterReadiness.Residue.
//
// The masters are probed at once, each call bounded by the node timeout
// or a second, whichever is longer, and by ctx. The error is non-nil only
// for bad input (ErrInvalid) or a closed client (ErrClosed): what a master
// does wrong is a Finding.
func (c *Client) Check(ctx context.Context, p CheckParams) (*Readiness, error) {
	if p.KeyPrefix == "" {
		p.KeyPrefix = DefaultCheckKeyPrefix
	}
	// The TTL and the key as a lock takes them.
	if _, err := c.checkKeyTTL(ctx, p.KeyPrefix, p.TTL); err != nil {
		return nil, err
	}
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.work.done()
	suffix, err := RandomToken()
	if err != nil {
		return nil, err
	}
	r := &Readiness{Quorum: c.quorum, TTL: p.TTL, Reserve: c.o.drift.Reserve(p.TTL), Masters: make([]MasterReadiness, len(c.nodes))}
	r.Window = c.o.restartGuard
	if r.Window == restartGuardAuto {
		r.Window = p.TTL + r.Reserve
	}
	pr := probe{c: c, key: p.KeyPrefix + suffix[:12], window: r.Window, reserve: r.Reserve, step: max(c.o.nodeTimeout, time.Second)}
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		r.Masters[i] = MasterReadiness{Node: i, Addr: n.addr()}
		m, ok := n.(*master)
		if !ok {
			r.Masters[i].add("reach", CheckFail, "not a Redis master the check can probe", "")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr.master(ctx, m, &r.Masters[i])
		}()
	}
	wg.Wait()
	return r, nil
}
