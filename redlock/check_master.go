package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/redlock/internal/info"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// probe is one run of Check: what it judges every master against.
type probe struct {
	c       *Client
	key     string        // the throwaway lock key, without the namespace
	window  time.Duration // the restart guard's window for the TTL
	reserve time.Duration // the drift reserve for the TTL
	step    time.Duration // bound on each call to a master
}

// eval runs call on m through its driver, bypassing the restart guard,
// whose state the check leaves as it is; questions, when given, ride ahead
// of the script on the same connection, as the guard's do.
func (p probe) eval(ctx context.Context, m *master, call driver.Call, questions ...[]string) (driver.Reply, error) {
	ctx, cancel := p.c.o.clock.WithTimeout(ctx, p.step)
	defer cancel()
	rctx, stop := m.realDeadline(ctx)
	defer stop()
	if questions != nil {
		call.Check = func(string) *driver.Check { return &driver.Check{Questions: questions, Always: true} }
	}
	return driver.Eval(rctx, m.drv, call)
}

// master probes one master into r.
func (p probe) master(ctx context.Context, m *master, r *MasterReadiness) {
	ins := scripts.Inspect{Key: p.key}.Call(m.scripts, m.names)
	byScript := func(cmd, script string) []string {
		return append([]string{cmd, script, strconv.Itoa(len(ins.Keys))}, ins.Keys...)
	}
	// The guard's questions, then the cluster's state, then a script by its
	// source and by its digest, as a driver sends them: EVALSHA alone
	// would not show a denied EVAL while the script is cached.
	qs := append(info.Questions(m.names.Stamp(p.key)),
		[]string{"INFO", "cluster"},
		byScript("EVAL", ins.Script.Src), byScript("EVALSHA", ins.Script.SHA),
	)
	rep, err := p.eval(ctx, m, ins, qs...)
	if len(rep.Answers) != len(qs) {
		reach(r, err)
		return
	}
	r.add("reach", CheckOK, "answers", "")
	f := p.server(r, m, rep)
	p.clock(ctx, m, r)
	cy := &cycle{p: p, m: m, r: r, noChannels: noChannelACL(f.Version)}
	if !cy.scriptCommands(rep.Answers[6:], err) {
		cy.lock(ctx)
	}
	cy.cleanup(ctx)
}

// reach reports a master that gave no answers at all.
func reach(r *MasterReadiness, err error) {
	if err == nil {
		err = errors.New("no answers to the check's questions")
	}
	switch msg := err.Error(); {
	case strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "WRONGPASS"):
		r.add("reach", CheckFail, "refuses the login: "+err.Error(),
			"give the lock's user and password in the address: redis://user:password@host:port")
	case code(err) == "":
		r.add("reach", CheckFail, "unreachable: "+err.Error(),
			"check the address, that redis-server runs there and the network lets the client through; rediss:// (or --tls) if it speaks TLS")
	default:
		r.add("reach", CheckFail, "answers, but refuses the check: "+err.Error(), "")
	}
}

// server judges what the guard's questions and INFO cluster returned,
// through the guard's own reading of them (info.Parse), and returns
// that reading.
func (p probe) server(r *MasterReadiness, m *master, rep driver.Reply) info.Fields {
	a := rep.Answers
	f := info.Parse(info.RepliesOf(a[:5]))
	trustU, trustE := p.c.o.trustUnreadable, p.c.o.trustEviction
	switch {
	case f.Unreadable != "" && trustU:
		r.add("readable", CheckWarn, "the restart guard cannot read the master's state ("+f.Unreadable+"); it votes blind, as WithTrustUnreadable asks",
			"grant +info to the lock's user")
	case f.Unreadable != "":
		r.add("readable", CheckFail, "the restart guard cannot read the master's state ("+f.Unreadable+"), so it will not let the master vote",
			"grant +info to the lock's user (or pass WithTrustUnreadable, blind to restarts, failovers and eviction)")
	case f.ConfigDenied != "":
		r.add("readable", CheckWarn, "INFO readable; "+f.ConfigDenied+": appendfsync always goes unrecognised, so a restart quarantines the master",
			"grant +config|get to the lock's user")
	default:
		r.add("readable", CheckOK, "INFO and CONFIG GET readable", "")
	}
	if f.Unreadable != "" {
		return f // nothing more to judge by
	}
	p.version(r, f)
	p.role(r, m, f, a[1], a[5], rep.Server)
	persistence(r, f, a[3])
	switch {
	case f.MayEvict() && trustE:
		r.add("eviction", CheckWarn, fmt.Sprintf("maxmemory-policy %s with maxmemory %d may evict lock keys; it votes, as WithTrustEviction asks", f.Policy, f.MaxMemory),
			"set maxmemory-policy noeviction")
	case f.MayEvict():
		r.add("eviction", CheckFail, fmt.Sprintf("maxmemory-policy %s with maxmemory %d may evict lock keys, so the restart guard will not let it vote", f.Policy, f.MaxMemory),
			"CONFIG SET maxmemory-policy noeviction (and in redis.conf), or a master of its own for the locks; WithTrustEviction only if memory can never run out")
	case f.MaxMemory == 0:
		r.add("eviction", CheckOK, "no maxmemory: nothing is evicted", "")
	default:
		r.add("eviction", CheckOK, "maxmemory-policy "+f.Policy+": nothing is evicted", "")
	}
	p.uptime(r, f)
	return f
}

func (p probe) version(r *MasterReadiness, f info.Fields) {
	if f.TooOld() {
		r.add("version", CheckFail, fmt.Sprintf("redis_version %s is older than %s", f.Version, info.MinVersion), "upgrade to Redis "+info.MinVersion+" or later")
		return
	}
	r.add("version", CheckOK, "Redis "+f.Version, "")
}

// role judges the master's replication role and whether it is a cluster
// node, and whether the client was given it as such.
func (p probe) role(r *MasterReadiness, m *master, f info.Fields, replication, cluster any, server string) {
	if f.Role != "master" {
		repl, _ := info.Section(replication)
		r.add("role", CheckFail, fmt.Sprintf("a replica (role:%s) of %s:%s: it cannot be a lock master, and the guard will not let it vote", f.Role, repl["master_host"], repl["master_port"]),
			"give the client its master's address, or a master of its own")
		return
	}
	cl, _ := info.Section(cluster)
	switch {
	case m.drv.Sharded():
		r.add("role", CheckOK, "a Redis Cluster given as one master; the check key's shard master is "+server, "")
	case cl["cluster_enabled"] == "1":
		r.add("role", CheckFail, "a Redis Cluster node given as a standalone master: it answers MOVED for keys of other nodes' slots",
			"give the whole cluster as one master: redis+cluster://host:port,host:port (redigo.NewCluster in code)")
	case f.Promoted():
		r.add("role", CheckWarn, "a master promoted from a replica: a client seeing it for the first time may keep it out of the quorum for up to the guard window", "")
	default:
		r.add("role", CheckOK, "a standalone master", "")
	}
}

// persistence reports the append-only file and its fsync policy, and what
// a restart means to the guard.
func persistence(r *MasterReadiness, f info.Fields, config any) {
	kv, err := info.ConfigPairs(config)
	switch {
	case err != nil:
		r.add("persistence", CheckOK, "unknown (CONFIG GET denied): after a restart the guard keeps it out of the quorum for the guard window", "")
	case f.Durable:
		r.add("persistence", CheckOK, "appendonly yes, appendfsync always: a restart keeps every lock, so the guard lets it vote at once after one", "")
	case kv["appendonly"] == "yes":
		r.add("persistence", CheckOK, "appendonly yes, appendfsync "+kv["appendfsync"]+": a restart may lose the last locks, so the guard keeps it out of the quorum for the guard window after one",
			"")
	default:
		r.add("persistence", CheckOK, "appendonly no: a restart loses every lock, so the guard keeps it out of the quorum for the guard window after one", "")
	}
}

// uptime judges the master's uptime against the guard window, as the guard
// does for a master it sees for the first time (see server.observe).
func (p probe) uptime(r *MasterReadiness, f info.Fields) {
	up := info.Youngest(f.Uptime)
	switch {
	case p.window <= 0:
		r.add("uptime", CheckOK, fmt.Sprintf("up %v; the restart guard is off", f.Uptime), "")
	case f.Durable:
		r.add("uptime", CheckOK, fmt.Sprintf("up %v; appendfsync always, so it votes whatever its uptime", f.Uptime), "")
	case up < p.window:
		r.VotesIn = p.window - up
		r.add("uptime", CheckWarn, fmt.Sprintf("up %v, less than the guard window %v: it votes in %v", f.Uptime, p.window, r.VotesIn.Round(100*time.Millisecond)),
			"wait; until then Lock waits and TryLock fails with ErrQuarantined where it leaves no quorum")
	default:
		r.add("uptime", CheckOK, fmt.Sprintf("up %v, longer than the guard window %v", f.Uptime, p.window), "")
	}
}

// clock reads the master's clock a few times, and judges the offset read
// over the shortest round trip against the drift reserve.
func (p probe) clock(ctx context.Context, m *master, r *MasterReadiness) {
	ins := scripts.Inspect{Key: p.key}.Call(m.scripts, m.names)
	var best clockReading
	var lastErr error
	for range 3 {
		sent := p.c.o.clock.Now()
		rep, _ := p.eval(ctx, m, ins, []string{"TIME"})
		received := p.c.o.clock.Now()
		if len(rep.Answers) != 1 {
			lastErr = errors.New("no answer")
			continue
		}
		rd, err := readClock(sent, received, rep.Answers[0])
		if err != nil {
			lastErr = err
			continue
		}
		if best.rtt == 0 || rd.rtt < best.rtt {
			best = rd
		}
	}
	if best.rtt == 0 {
		r.add("clock", CheckWarn, fmt.Sprintf("cannot read the master's clock: %v", lastErr), "grant +time to the lock's user")
		return
	}
	r.Offset, r.RTT = best.offset, best.rtt
	lvl, fix := CheckOK, ""
	if !withinReserve(best.offset, best.rtt, p.reserve) {
		lvl, fix = CheckWarn, "synchronise the clocks of the masters and clients with NTP (chrony, systemd-timesyncd)"
	}
	r.add("clock", lvl, fmt.Sprintf("offset %+v ±%v from the client's, drift reserve %v", best.offset.Round(time.Microsecond), (best.rtt/2).Round(time.Microsecond), p.reserve), fix)
}
