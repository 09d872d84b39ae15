package redlock

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
	"github.com/quorumlock/quorumlock/redlock/internal/info"
)

// health is what the guard knows of one master. The zero value knows
// nothing and vetoes nothing: a node without a guard votes.
type health struct {
	known     bool      // INFO answered with everything the guard reads
	startedAt time.Time // when the master started, on the client's clock, read as late as it can be
	// bootAt starts the restart quarantine: startedAt, or the moment this
	// client first saw a run_id other than the one it knew.
	bootAt time.Time
	// promotedAt starts the failover quarantine of a master that was
	// promoted from a replica: the earliest moment it is known to have been
	// a master under its current replication ID. Zero when not promoted.
	promotedAt time.Time
	durable    bool   // appendonly yes and appendfsync always: no restart quarantine needed
	runID      string // INFO server run_id
	replID     string // INFO replication master_replid
	id         string // runID and replID as the acquire script takes them (see identity)
	// veto says why the master may not vote at all, whatever the time: a
	// replica, a master that may evict lock keys, one whose state cannot
	// be read. "" when it may vote.
	veto   string
	seenAt time.Time // when this was read
}

// trusted reports whether the master's vote counts at now.
func (h health) trusted(now time.Time, window time.Duration) bool {
	return h.distrust(now, window) == ""
}

// distrust says why the master's vote does not count at now, or "" if it does.
// A master that restarted (or changed its run_id) is out for window from
// then, unless it keeps every write across a restart; a master promoted from
// a replica is out for window from when it is known to have been promoted,
// durable or not, since what it lacks never reached it. A master first seen
// young may be new rather than restarted: the guard cannot tell the two
// apart, so the text says both.
func (h health) distrust(now time.Time, window time.Duration) string {
	switch {
	case h.veto != "":
		return h.veto
	case window <= 0 || !h.known:
		return ""
	case !h.promotedAt.IsZero() && now.Sub(h.promotedAt) < window:
		return fmt.Sprintf("promoted from a replica, known for %v, votes in %v", roughly(now.Sub(h.promotedAt)), roughly(h.votesIn(now, window)))
	case !h.durable && now.Sub(h.bootAt) < window && h.bootAt.After(h.startedAt):
		return fmt.Sprintf("restarted or replaced (its run_id changed %v ago), votes in %v", roughly(now.Sub(h.bootAt)), roughly(h.votesIn(now, window)))
	case !h.durable && now.Sub(h.bootAt) < window:
		return fmt.Sprintf("new or restarted, up %v, votes in %v", roughly(now.Sub(h.startedAt)), roughly(h.votesIn(now, window)))
	}
	return ""
}

// votesIn returns how long until the master's vote counts by the clock
// alone: 0 when it counts now, or when only a veto keeps it out, which time
// does not lift.
func (h health) votesIn(now time.Time, window time.Duration) time.Duration {
	if h.veto != "" || window <= 0 || !h.known {
		return 0
	}
	var d time.Duration
	if !h.promotedAt.IsZero() {
		d = max(d, h.promotedAt.Add(window).Sub(now))
	}
	if !h.durable {
		d = max(d, h.bootAt.Add(window).Sub(now))
	}
	return max(d, 0)
}

// roughly rounds d for people to read: to the microsecond below a
// millisecond, to the millisecond below a second, to a tenth of a second
// below ten, to the second above.
func roughly(d time.Duration) time.Duration {
	switch {
	case d > -time.Millisecond && d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// identity is the master's identity as the acquire script checks it against
// the stamp on its fence data: run_id and replication ID.
func (h health) identity() string {
	if !h.known {
		return ""
	}
	return h.id
}

// guard watches one master: its restarts, a failover to another server or to
// a promoted replica, its role, whether it may evict keys, and whether its
// state can be read at all. What it reads shows on a new connection, so the
// master is asked again whenever its pool has dialled since the last answer;
// the questions ride in the same round trip as the script.
type guard struct {
	clock  clock.Clock
	log    *slog.Logger
	window func() time.Duration
	// trustEviction and trustUnreadable: see WithTrustEviction and
	// WithTrustUnreadable.
	trustEviction, trustUnreadable bool
	obs                            Observer

	mu      sync.Mutex // serialises observe
	state   atomic.Pointer[health]
	seen    atomic.Uint64 // the pool's dial count at the last answer
	recheck atomic.Bool   // ask again on the next call
	plain   atomic.Pointer[plainCheck]
	dropped bool       // a connection was lost since the last health read; under mu
	notes   guardNotes // what has been logged; under mu
	// lastKnown is the last health read that could be read, for comparing
	// run_id and replication ID across unreadable answers; under mu.
	lastKnown *health
}

// guardNotes is what the guard last logged of a master, so that each change
// is logged once.
type guardNotes struct {
	kind, config string
}

// newGuard returns the guard of one master.
func newGuard(o *options, window func() time.Duration) *guard {
	return &guard{clock: o.clock, log: o.logger, window: window, trustEviction: o.trustEviction, trustUnreadable: o.trustUnreadable, obs: o.observer}
}

// recheckVetoed is how often a master that may not vote is read again
// without waiting for a new connection: a replica may be promoted, and an
// eviction policy or an ACL fixed, while the connections stay.
const recheckVetoed = time.Second

func (g *guard) load() health {
	if g == nil {
		return health{}
	}
	if h := g.state.Load(); h != nil {
		return *h
	}
	return health{}
}

// connectionLost notes a connection found dead: the master may have
// restarted, so it is asked again on the next call.
func (g *guard) connectionLost() {
	if g == nil {
		return
	}
	g.recheck.Store(true)
	g.mu.Lock()
	g.dropped = true
	g.mu.Unlock()
}

// askAgain has the master read again on the next call, as after a READONLY
// reply: it may have become a replica, or a replica may have been promoted.
func (g *guard) askAgain() {
	if g != nil {
		g.recheck.Store(true)
	}
}

// observe records a health read made on a connection taken when the pool had
// dialled dials times. An answer from before the last one recorded is
// dropped: its connection is older, and may have reached the master before a
// restart that the last answer saw (a client paused between reading a reply
// and recording it).
func (g *guard) observe(addr string, rd info.Replies, dials uint64) {
	var change guardChange
	defer change.report() // after the mutex is released
	g.mu.Lock()
	defer g.mu.Unlock()
	if dials < g.seen.Load() {
		return
	}
	now := g.clock.Now()
	prev := g.lastKnown
	f := info.Parse(rd)
	h := health{seenAt: now, durable: f.Durable}
	if f.Unreadable == "" {
		h.known, h.runID, h.replID, h.id = true, f.RunID, f.ReplID, f.Identity()
		h.startedAt = now.Add(-info.Youngest(f.Uptime))
		h.bootAt = h.startedAt
		switch {
		case prev == nil:
			// First sight: the uptime is all there is to go on.
		case prev.runID == f.RunID:
			// The same master seen again: keep the later, more cautious estimate.
			h.startedAt = later(h.startedAt, prev.startedAt)
			h.bootAt = later(h.bootAt, prev.bootAt)
		default:
			// Another process answers at this address: the master restarted,
			// or the address now leads to another server. Either way its data
			// may lack what the one this client knew had; count it as
			// restarted now, whatever its uptime.
			h.bootAt = now
		}
		if f.Promoted() {
			h.promotedAt = now
			if prev != nil && !prev.promotedAt.IsZero() && prev.identity() == h.identity() {
				h.promotedAt = prev.promotedAt
			}
			if at, ok := f.StampedAt(now); ok && at.Before(h.promotedAt) {
				h.promotedAt = at
			}
		}
	}
	kind, veto := g.judge(f)
	h.veto = veto
	g.state.Store(&h)
	g.seen.Store(dials)
	g.recheck.Store(false)
	g.note(&change, addr, prev, &h, f, kind)
	g.report(addr, prev, &h, f, kind)
	if h.known {
		g.lastKnown = &h
	}
	g.dropped = false
}

// judge returns the kind of state a health read shows, as the logs name it
// in their "state" attribute, and why the master may not vote at all,
// whatever the time, or "" if it may. The kinds that veto are unreadable,
// replica, too-old and may-evict; those that vote are unreadable-trusted,
// may-evict-trusted and voting.
func (g *guard) judge(f info.Fields) (kind, veto string) {
	switch {
	case f.Unreadable != "" && g.trustUnreadable:
		return "unreadable-trusted", ""
	case f.Unreadable != "":
		return "unreadable", "its state cannot be read (" + f.Unreadable + "); allow INFO for this user, or pass WithTrustUnreadable"
	case f.Role != "master":
		return "replica", "it is a replica (role:" + f.Role + "), not a master; give the client the master's address"
	case f.TooOld():
		return "too-old", fmt.Sprintf("redis_version %s is older than %s, the oldest this library runs on", f.Version, info.MinVersion)
	case f.MayEvict() && !g.trustEviction:
		return "may-evict", fmt.Sprintf("maxmemory-policy %s with maxmemory %d may evict lock keys; set maxmemory-policy noeviction, or pass WithTrustEviction", f.Policy, f.MaxMemory)
	case f.MayEvict():
		return "may-evict-trusted", ""
	}
	return "voting", ""
}

// report logs what changed: once per change of state, and for a master whose
// INFO cannot be read, again after each lost connection, since its restarts
// cannot be seen. Every message carries the master's address ("addr") and
// what it is about ("state").
func (g *guard) report(addr string, prev, h *health, f info.Fields, kind string) {
	if kind != g.notes.kind || (g.dropped && f.Unreadable != "") {
		switch kind {
		case "unreadable-trusted":
			g.log.Warn("redlock: cannot read the master's state ("+f.Unreadable+"); trusted as WithTrustUnreadable asks, so its restarts, failovers and evictions go unseen",
				"addr", addr, "state", kind)
		case "may-evict-trusted":
			g.log.Warn("redlock: master may evict lock keys (maxmemory-policy "+f.Policy+"); trusted as WithTrustEviction asks",
				"addr", addr, "state", kind, "maxmemory", f.MaxMemory)
		case "voting":
			if g.notes.kind != "" {
				g.log.Info("redlock: master may vote again", "addr", addr, "state", kind)
			}
		default:
			g.log.Warn("redlock: master does not vote: "+h.veto, "addr", addr, "state", kind)
		}
		g.notes.kind = kind
	}
	if f.ConfigDenied != g.notes.config && f.Unreadable == "" {
		if f.ConfigDenied != "" {
			g.log.Info("redlock: cannot read the master's CONFIG ("+f.ConfigDenied+"); appendfsync always is not recognised, so a restart quarantines it as any master",
				"addr", addr, "state", "config-unreadable")
		}
		g.notes.config = f.ConfigDenied
	}
	if !h.known {
		return
	}
	w := g.window()
	now := h.seenAt
	votes := "its votes do not count for the guard window"
	if w <= 0 {
		votes = "the restart guard is off (WithRestartGuard(0)), so it votes at once"
	}
	switch {
	case !h.promotedAt.IsZero() && (prev == nil || prev.promotedAt.IsZero() || prev.identity() != h.identity()):
		g.log.Warn("redlock: master was promoted from a replica and may lack the last writes of the master it replaced; "+votes+"; its fences restart from its clock",
			"addr", addr, "state", "promoted", "run_id", h.runID, "known_for", now.Sub(h.promotedAt).Round(time.Second), "window", w)
	case prev != nil && prev.runID != h.runID:
		up := now.Sub(h.startedAt)
		if h.durable && w > 0 {
			votes = "it has appendfsync always, so it is trusted as a master restarted in place"
		}
		if up >= w {
			g.log.Warn("redlock: another server answers at the master's address (its run_id changed, and it has been up longer than the guard window): a failover; "+votes,
				"addr", addr, "state", "replaced", "run_id", h.runID, "was", prev.runID, "uptime", up.Round(time.Second), "window", w)
		} else if !h.durable && w > 0 {
			g.log.Info("redlock: master restarted or replaced (its run_id changed): up "+roughly(up).String()+", votes in "+roughly(h.votesIn(now, w)).String(),
				"addr", addr, "state", "restarted", "run_id", h.runID, "uptime", roughly(up), "votes_in", roughly(h.votesIn(now, w)), "window", w)
		}
	case prev == nil:
		if up := now.Sub(h.startedAt); !h.durable && w > 0 && up < w {
			g.log.Info("redlock: master new or restarted: up "+roughly(up).String()+", votes in "+roughly(h.votesIn(now, w)).String(),
				"addr", addr, "state", "restarted", "run_id", h.runID, "uptime", roughly(up), "votes_in", roughly(h.votesIn(now, w)), "window", w)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// vote turns a master's yes into a vote: a master the restart guard holds in
// quarantine abstains.
func (c *Client) vote(i int, key string, window time.Duration) fanout.Vote {
	if c.nodes[i].health(key).trusted(c.o.clock.Now(), window) {
		return fanout.Yes
	}
	return fanout.Abstain
}
