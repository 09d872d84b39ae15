package redlock

import (
	"bufio"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/pool"
)

// health is what the restart guard knows of one master.
type health struct {
	known   bool      // INFO answered
	bootAt  time.Time // when the master started, on the client's clock
	durable bool      // appendonly yes and appendfsync always: no quarantine needed
	runID   string
}

// trusted reports whether the master's vote counts at now: it has been up for
// at least window, or it keeps every write across a restart. A master whose
// INFO cannot be read is trusted, and a warning says the guard is blind there.
func (h health) trusted(now time.Time, window time.Duration) bool {
	return window <= 0 || !h.known || h.durable || now.Sub(h.bootAt) >= window
}

// guard watches one master for restarts. A restart shows on a new connection,
// so the master is asked again whenever its pool has dialled since the last
// answer; the question rides in the same round trip as the script.
type guard struct {
	clock  clock.Clock
	log    *slog.Logger
	window func() time.Duration

	mu      sync.Mutex // serialises observe
	state   atomic.Pointer[health]
	seen    atomic.Uint64 // the pool's dial count at the last answer
	recheck atomic.Bool   // for pools that do not count dials: ask again
	warned  atomic.Bool
}

func (g *guard) load() health {
	if g == nil {
		return health{}
	}
	if h := g.state.Load(); h != nil {
		return *h
	}
	return health{}
}

// due reports whether the master must be asked again, and the dial count to
// remember once it has answered.
func (g *guard) due(p pool.Pool) (bool, uint64) {
	if g == nil {
		return false, 0
	}
	if dc, ok := p.(pool.DialCounter); ok {
		d := dc.Dials()
		return d != g.seen.Load(), d
	}
	return g.recheck.Load() || g.state.Load() == nil, 0
}

func (g *guard) connectionLost() {
	if g != nil {
		g.recheck.Store(true)
	}
}

// observe records the answers to INFO server and CONFIG GET append*, asked
// on a connection taken when the pool had dialled dials times. An answer
// from before the last one recorded is dropped: its connection is older,
// and may have reached the master before a restart that the last answer
// saw (a client paused between reading a reply and recording it).
func (g *guard) observe(addr string, info, config any, dials uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if dials < g.seen.Load() {
		return
	}
	h := health{}
	if s, err := redis.String(info, nil); err == nil {
		if up, id, ok := parseInfo(s); ok {
			h.known, h.runID = true, id
			h.bootAt = g.clock.Now().Add(-youngest(up))
		}
	}
	if kv, err := redis.StringMap(config, nil); err == nil {
		h.durable = kv["appendonly"] == "yes" && kv["appendfsync"] == "always"
	}
	prev := g.state.Load()
	if prev != nil && prev.known && h.known && prev.runID == h.runID && prev.bootAt.After(h.bootAt) {
		// The same master seen again: keep the later, more cautious estimate.
		h.bootAt = prev.bootAt
	}
	g.state.Store(&h)
	g.seen.Store(dials)
	g.recheck.Store(false)

	switch {
	case !h.known:
		if g.warned.CompareAndSwap(false, true) {
			g.log.Warn("redlock: cannot read INFO from master; the restart guard cannot protect against its restarts",
				"addr", addr)
		}
	case prev == nil || prev.runID != h.runID:
		w := g.window()
		if up := g.clock.Now().Sub(h.bootAt); !h.durable && w > 0 && up < w {
			g.log.Info("redlock: master restarted recently; its votes do not count until its uptime reaches the guard window",
				"addr", addr, "run_id", h.runID, "uptime", up.Round(time.Second), "window", w)
		}
	}
}

// youngest is the shortest time a master can have been up when INFO says
// uptime_in_seconds is up. Redis counts it as the difference of two clock
// readings truncated to whole seconds, so it runs up to a second ahead: a
// master started at 10.9 s reports 1 at 11.0 s, after 0.1 s. Taking the
// uptime at its word would end a quarantine up to a second early.
func youngest(up time.Duration) time.Duration {
	return max(up-time.Second, 0)
}

// parseInfo reads uptime_in_seconds and run_id from INFO server.
func parseInfo(s string) (uptime time.Duration, runID string, ok bool) {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, found := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !found {
			continue
		}
		switch k {
		case "uptime_in_seconds":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return 0, "", false
			}
			uptime, ok = time.Duration(n)*time.Second, true
		case "run_id":
			runID = v
		}
	}
	return uptime, runID, ok
}
