package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/slot"
	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
	"github.com/quorumlock/quorumlock/redlock/internal/info"
)

// answered hands what a call learned of the master to its servers, and
// returns the call's reply.
func (m *master) answered(call driver.Call, rep driver.Reply, err error, started callStart) (any, error) {
	return rep.Value, m.servers.answered(call.Keys[0], rep, err, m.drv.Sharded(), started)
}

// callStart is when a call went out, which orders what its reply says of
// the master among what other calls' replies said.
type callStart struct {
	reads uint64 // the node's read count (see servers.reads)
	at    int64  // the time, in UnixNano on the client's clock (see server.answeredAt)
}

func (m *master) health(key string) health { return m.servers.healthOf(m.names.Lock(key)) }

// silent is the plain master's silence. A Redis Cluster given as one node
// is never silent: its shards answer for themselves.
func (m *master) silent(window time.Duration) bool {
	return !m.drv.Sharded() && m.servers.own.silent(window)
}

// servers is what the lock knows of the servers behind one node: the one
// master of a plain node, or each shard master of a Redis Cluster given as
// one node, which restarts, fails over and fails on its own while its
// neighbours answer. Each reply feeds it once, through answered.
type servers struct {
	node   string               // the node's address, logged beside a shard's
	o      *options             // the client's
	window func() time.Duration // the guard window; nil for no guard, in tests of other parts
	own    *server              // the plain master's ("" or the node's name)
	by     sync.Map             // another server's name → *server; read on every call, written once per server
	// reads counts the health reads recorded of the node's servers; a call
	// reads it as it goes out, so that a read can tell whether its call went
	// out after another read was recorded (see server.observe).
	reads atomic.Uint64

	mu sync.Mutex
	// at maps a cluster's slot to the server that last answered for it, so
	// that a vote on a key is judged by the health of the shard it went to.
	at map[int]string
}

func newServers(node string, o *options, window func() time.Duration) *servers {
	ss := &servers{node: node, o: o, window: window, at: map[int]string{}}
	ss.own = ss.newServer(node, o.logger)
	return ss
}

func (ss *servers) newServer(addr string, log *slog.Logger) *server {
	s := &server{addr: addr, o: ss.o, window: ss.window, reads: &ss.reads, cond: condition{log: log, addr: addr, obs: ss.o.observer}}
	s.answeredAt.Store(ss.o.clock.Now().UnixNano()) // being made counts as an answer
	return s
}

// guarded reports whether the servers have a restart guard.
func (ss *servers) guarded() bool { return ss.window != nil }

// of returns the server named name, as a reply names it ("" for a plain
// master), made on first use. The plain master, which every call to a plain
// node reaches, is found without a map.
func (ss *servers) of(name string) *server {
	if name == "" || name == ss.node {
		return ss.own
	}
	if s, ok := ss.by.Load(name); ok {
		return s.(*server)
	}
	s, _ := ss.by.LoadOrStore(name, ss.newServer(name, ss.o.logger.With("node", ss.node)))
	return s.(*server)
}

// answered takes what one call to the node learned, and returns err as the
// lock judges it: on a Redis Cluster node, a redirection is the cluster
// changing. key is the call's first key, the lock key with its namespace.
func (ss *servers) answered(key string, rep driver.Reply, err error, sharded bool, started callStart) error {
	if ss.guarded() && rep.Server != "" {
		ss.mu.Lock()
		ss.at[slot.Of(key)] = rep.Server
		ss.mu.Unlock()
	}
	if sharded {
		err = asClusterChange(err)
	}
	ss.of(rep.Server).answered(rep, err, started)
	return err
}

// healthOf returns the health that judges a vote on key, a lock key with its
// namespace: the plain master's, or that of the shard master that last
// answered for key's slot. A shard never heard from may not vote. Without
// a guard, every vote counts.
func (ss *servers) healthOf(key string) health {
	if !ss.guarded() {
		return health{}
	}
	ss.mu.Lock()
	name, cluster := ss.at[slot.Of(key)], len(ss.at) > 0
	ss.mu.Unlock()
	s := ss.of(name) // made already: at names only servers that answered
	if (cluster || name != "") && s.state.Load() == nil {
		return health{veto: "no health read of the shard master owning the key"}
	}
	return s.load()
}

// server is what the lock knows of one server behind a node, fed once per
// reply through answered: what the restart guard read of it, how its last
// call went (its condition, logged once per change), and whether it answers
// at all (its silence, read for a plain node's master only).
//
// The guard watches the master's restarts, a failover to another server or
// to a promoted replica, its role, whether it may evict keys, and whether
// its state can be read at all. What it reads shows on a new connection, so
// the questions go on each connection until it has answered them; they ride
// in the same round trip as the script (see master.check).
//
// The silence tells a master that answers nothing at all (paused, or cut
// off with its connection open) from one that is slow or busy. It is silent
// when its last call was sent and got no reply within its timeout, and no
// call got an answer for a while (the window the caller asks with): a busy
// master, whose calls time out among others answered, is not. Any answer, a
// Redis error too, clears it. A call that never reached the master (a dial
// that timed out, a caller that cancelled) says nothing of it.
type server struct {
	addr   string
	o      *options             // the client's: clock, logger, observer, what the guard trusts
	window func() time.Duration // the guard window; nil for no guard
	cond   condition            // how its last call went
	reads  *atomic.Uint64       // the node's (servers.reads)

	mu      sync.Mutex // serialises observe
	state   atomic.Pointer[health]
	recheck atomic.Bool // ask again on the next call
	plain   atomic.Pointer[plainCheck]
	dropped bool       // a connection was lost since the last health read; under mu
	notes   guardNotes // what the guard has logged; under mu
	// lastKnown is the last health read that could be read, for comparing
	// run_id and replication ID across unreadable answers; under mu.
	lastKnown *health
	// changed is the node's read count (servers.reads) once the last read
	// that saw a new run_id was recorded; under mu. See observe.
	changed uint64

	unanswered atomic.Bool  // the last call sent got no reply
	answeredAt atomic.Int64 // when a call last got an answer (UnixNano on the client's clock)
}

// guardNotes is what the guard last logged of a master, so that each change
// is logged once.
type guardNotes struct {
	kind, config string
}

// answered takes what one call to the server learned: the guard's answers,
// a lost connection (the master may have restarted), a READONLY reply (it
// may have become a replica, or a replica may have been promoted), and how
// the call went.
//
// A call that got no reply says the master answered nothing since it went
// out. Where another call got an answer after that, the master did answer:
// the timeout is older news (a call sent while the master was paused, whose
// deadline passes just after it resumed), and it changes neither the
// master's condition nor its silence.
func (s *server) answered(rep driver.Reply, err error, started callStart) {
	if s.window != nil {
		if rep.Lost {
			s.recheck.Store(true)
			s.mu.Lock()
			s.dropped = true
			s.mu.Unlock()
		}
		if rep.Answers != nil {
			s.observe(info.RepliesOf(rep.Answers), started.reads)
		}
		if err != nil && code(err) == "READONLY" {
			s.recheck.Store(true)
		}
	}
	if err != nil && timedOut(err) && started.at < s.answeredAt.Load() {
		return
	}
	s.cond.note(err)
	switch {
	case err == nil || code(err) != "":
		s.answeredAt.Store(s.o.clock.Now().UnixNano())
		s.unanswered.Store(false)
	case errors.Is(err, context.Canceled) || dialFailed(err):
	case timedOut(err):
		s.unanswered.Store(true)
	default: // refused, reset: the master fails fast, it does not keep anyone waiting
		s.unanswered.Store(false)
	}
}

// silent reports whether the server is silent: its last call got no reply,
// and nothing has answered for window.
func (s *server) silent(window time.Duration) bool {
	return s.unanswered.Load() && s.o.clock.Since(time.Unix(0, s.answeredAt.Load())) >= window
}

// dialFailed reports whether err is a failure to connect: the call never
// reached the master.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// recheckVetoed is how often a master that may not vote is read again
// without waiting for a new connection: a replica may be promoted, and an
// eviction policy or an ACL fixed, while the connections stay.
const recheckVetoed = time.Second

// load returns what the guard last read of the server.
func (s *server) load() health {
	if h := s.state.Load(); h != nil {
		return *h
	}
	return health{}
}

// observe records a health read, made by a call that went out when the
// node had recorded started reads (servers.reads).
//
// A read can be recorded after a later one: its goroutine held up between
// the reply and observe, it may come from a connection to the process that
// answered before a restart that the later read saw. Nothing orders
// connections across processes, so observe never lets such a read make a
// master vote sooner than the reads before it did. Another run_id than the
// last read's starts the restart quarantine, however long up, and its read
// is not durable whatever appendfsync it reports; the master is asked again
// at once, and a read of the same run_id by a call that went out after the
// change was recorded confirms it: from then on its appendfsync counts. A
// late read can thus only keep a master out for longer: never can a
// predecessor's appendfsync let a restarted master vote. A first read is
// taken as it is: a call on a connection that has not answered carries
// its own read, taken before its vote is judged, so no vote is judged by a
// read of a process that answered before the one it went to.
func (s *server) observe(rd info.Replies, started uint64) {
	var change guardChange
	defer change.report() // after the mutex is released
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.clock.Now()
	prev := s.lastKnown
	f := info.Parse(rd)
	h := health{seenAt: now, durable: f.Durable}
	reads := s.reads.Add(1)
	changed := false // a run_id other than the last read's
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
		if prev != nil && prev.runID != f.RunID {
			changed = true
			h.durable = false
		} else if started < s.changed {
			h.durable = prev.durable
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
	kind, veto := s.judge(f)
	h.veto = veto
	s.state.Store(&h)
	if changed {
		s.changed = reads
	}
	// After another run_id, ask again at once: the read that confirms it
	// lets a durable master vote (see above), and puts right the identity
	// the acquire script is given.
	s.recheck.Store(changed)
	s.noteChange(&change, prev, &h, f, kind)
	s.logChange(prev, &h, f, kind)
	if h.known {
		s.lastKnown = &h
	}
	s.dropped = false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// judge returns the kind of state a health read shows, as the logs name it
// in their "state" attribute, and why the master may not vote at all,
// whatever the time, or "" if it may. The kinds that veto are unreadable,
// replica, too-old and may-evict; those that vote are unreadable-trusted,
// may-evict-trusted and voting.
func (s *server) judge(f info.Fields) (kind, veto string) {
	switch {
	case f.Unreadable != "" && s.o.trustUnreadable:
		return "unreadable-trusted", ""
	case f.Unreadable != "":
		return "unreadable", "its state cannot be read (" + f.Unreadable + "); allow INFO for this user, or pass WithTrustUnreadable"
	case f.Role != "master":
		return "replica", "it is a replica (role:" + f.Role + "), not a master; give the client the master's address"
	case f.TooOld():
		return "too-old", fmt.Sprintf("redis_version %s is older than %s, the oldest this library runs on", f.Version, info.MinVersion)
	case f.MayEvict() && !s.o.trustEviction:
		return "may-evict", fmt.Sprintf("maxmemory-policy %s with maxmemory %d may evict lock keys; set maxmemory-policy noeviction, or pass WithTrustEviction", f.Policy, f.MaxMemory)
	case f.MayEvict():
		return "may-evict-trusted", ""
	}
	return "voting", ""
}

// logChange logs what a health read changed: once per change of state, and
// for a master trusted though its INFO cannot be read, again after each
// lost connection, since a restart there goes unseen while it votes (one
// that does not vote is not warned about again: nothing changed). Every
// message carries the master's address ("addr") and what it is about
// ("state"). Its events are noted by noteChange.
func (s *server) logChange(prev, h *health, f info.Fields, kind string) {
	log, addr := s.o.logger, s.addr
	if kind != s.notes.kind || (s.dropped && kind == "unreadable-trusted") {
		switch kind {
		case "unreadable-trusted":
			log.Warn("redlock: cannot read the master's state ("+f.Unreadable+"); trusted as WithTrustUnreadable asks, so its restarts, failovers and evictions go unseen",
				"addr", addr, "state", kind)
		case "may-evict-trusted":
			log.Warn("redlock: master may evict lock keys (maxmemory-policy "+f.Policy+"); trusted as WithTrustEviction asks",
				"addr", addr, "state", kind, "maxmemory", f.MaxMemory)
		case "voting":
			if s.notes.kind != "" {
				log.Info("redlock: master may vote again", "addr", addr, "state", kind)
			}
		default:
			log.Warn("redlock: master does not vote: "+h.veto, "addr", addr, "state", kind)
		}
		s.notes.kind = kind
	}
	if f.ConfigDenied != s.notes.config && f.Unreadable == "" {
		if f.ConfigDenied != "" {
			log.Info("redlock: cannot read the master's CONFIG ("+f.ConfigDenied+"); appendfsync always is not recognised, so a restart quarantines it as any master",
				"addr", addr, "state", "config-unreadable")
		}
		s.notes.config = f.ConfigDenied
	}
	if !h.known {
		return
	}
	w := s.window()
	now := h.seenAt
	votes := "its votes do not count for the guard window"
	if w <= 0 {
		votes = "the restart guard is off (WithRestartGuard(0)), so it votes at once"
	}
	switch {
	case !h.promotedAt.IsZero() && (prev == nil || prev.promotedAt.IsZero() || prev.identity() != h.identity()):
		log.Warn("redlock: master was promoted from a replica and may lack the last writes of the master it replaced; "+votes+"; its fences restart from its clock",
			"addr", addr, "state", "promoted", "run_id", h.runID, "known_for", now.Sub(h.promotedAt).Round(time.Second), "window", w)
	case prev != nil && prev.runID != h.runID:
		up := now.Sub(h.startedAt)
		if h.durable && w > 0 {
			votes = "it has appendfsync always, so it is trusted as a master restarted in place"
		}
		if up >= w {
			log.Warn("redlock: another server answers at the master's address (its run_id changed, and it has been up longer than the guard window): a failover; "+votes,
				"addr", addr, "state", "replaced", "run_id", h.runID, "was", prev.runID, "uptime", up.Round(time.Second), "window", w)
		} else if !h.durable && w > 0 {
			log.Info("redlock: master restarted or replaced (its run_id changed): up "+roughly(up).String()+", votes in "+roughly(h.votesIn(now, w)).String(),
				"addr", addr, "state", "restarted", "run_id", h.runID, "uptime", roughly(up), "votes_in", roughly(h.votesIn(now, w)), "window", w)
		}
	case prev == nil:
		if up := now.Sub(h.startedAt); !h.durable && w > 0 && up < w {
			log.Info("redlock: master new or restarted: up "+roughly(up).String()+", votes in "+roughly(h.votesIn(now, w)).String(),
				"addr", addr, "state", "restarted", "run_id", h.runID, "uptime", roughly(up), "votes_in", roughly(h.votesIn(now, w)), "window", w)
		}
	}
}

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

// vote turns a master's yes into a vote: a master the restart guard holds in
// quarantine abstains.
func (c *Client) vote(i int, key string, window time.Duration) fanout.Vote {
	if c.nodes[i].health(key).trusted(c.o.clock.Now(), window) {
		return fanout.Yes
	}
	return fanout.Abstain
}

// check returns the guard's part of a call to server about key: its
// questions, sent when the call's connection is new since the last answers,
// or always when the master must be asked again; nil when the guard is off.
// The fence stamp read is that of key's slot. A standalone master is server
// "", the only one the guard knows.
func (m *master) check(server, key string) *driver.Check {
	if !m.servers.guarded() {
		return nil
	}
	s := m.servers.of(server)
	h := s.state.Load()
	always := s.recheck.Load() || h == nil || (h.veto != "" && s.o.clock.Since(h.seenAt) >= recheckVetoed)
	// A plain master has one fence stamp, so its check is the same for
	// every key: the one built last serves while what it was built from
	// holds.
	keep := !always && !m.names.PerSlot
	if keep {
		if pc := s.plain.Load(); pc != nil && pc.state == h {
			return pc.check
		}
	}
	c := &driver.Check{
		// Built only when due: most calls go on a connection already asked.
		Ask:    func() [][]string { return info.Questions(m.names.Stamp(key)) },
		Always: always,
	}
	if h != nil {
		c.Hint = h.identity()
	}
	if keep {
		s.plain.Store(&plainCheck{state: h, check: c})
	}
	return c
}

// plainCheck is the check last built for a plain master, and the health it
// was built from: see master.check.
type plainCheck struct {
	state *health
	check *driver.Check
}

// condition remembers how the last call to one master went, so that a
// master that keeps failing while a quorum carries on is reported once when
// the failure starts or changes, and once when it clears: not on every call,
// and not never. A failure that no retry fixes (a refused password, an ACL,
// a replica or a cluster member given as a master, a host that does not
// resolve) is a warning, with what would fix it; a master down or slow, which
// the quorum is there to ride out, is information. A master's pub/sub
// connection has one too (see subscriber).
type condition struct {
	log    *slog.Logger
	addr   string
	what   string // what fails: "master" when empty
	effect string // what that means; "its votes do not count until this clears" when empty
	obs    Observer

	mu   sync.Mutex
	kind string // "" while the master answers
}

// note records the outcome of one call. Errors that say nothing of the
// master (the caller cancelled) change nothing.
func (c *condition) note(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	kind := ""
	if err != nil {
		kind = failureKind(err)
	}
	c.mu.Lock()
	prev := c.kind
	if kind == prev {
		c.mu.Unlock()
		return // the common case: a master that answers, as it did before
	}
	if kind != "" && remedy(kind) == "" && remedy(prev) != "" {
		// A passing failure (a timeout, a dropped connection) of a master
		// that fails for good until its configuration changes: that is
		// still the state to report, and the warning stands.
		c.mu.Unlock()
		return
	}
	c.kind = kind
	c.mu.Unlock()
	observeCondition(c.obs, c.addr, prev, kind)
	what, effect := c.what, c.effect
	if what == "" {
		what, effect = "master", "its votes do not count until this clears"
	}
	switch {
	case kind == "":
		c.log.Info("redlock: "+what+" answers again", "addr", c.addr, "was", prev)
	default:
		fix := remedy(kind)
		if fix == "" {
			c.log.Info("redlock: "+what+" not answering; "+effect, "addr", c.addr, "failure", kind, "err", err)
			return
		}
		c.log.Warn("redlock: "+what+" failing; "+effect, "addr", c.addr, "failure", kind, "err", err, "fix", fix)
	}
}
