package redlock

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/clock"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/slot"
	"github.com/quorumlock/quorumlock/redlock/internal/info"
)

// servers is what the lock knows of the servers behind one node: the one
// master of a plain node, or each shard master of a Redis Cluster given as
// one node, which restarts, fails over and fails on its own while its
// neighbours answer. Each reply feeds it once, through answered.
type servers struct {
	node     string        // the node's address, logged beside a shard's
	log      *slog.Logger  // the client's
	obs      Observer      // the client's
	newGuard func() *guard // makes a server's guard; nil for none, in tests of other parts
	// quiet tells whether the node answers at all; nil for a Redis Cluster,
	// whose shards answer for themselves.
	quiet *silence

	own atomic.Pointer[server] // the plain master's ("" or the node's name), made on first use
	by  sync.Map               // another server's name → *server; read on every call, written once per server

	mu sync.Mutex
	// at maps a cluster's slot to the server that last answered for it, so
	// that a vote on a key is judged by the health of the shard it went to.
	at map[int]string
}

// server is one server behind a node.
type server struct {
	guard *guard     // what the guard knows of it; nil without a guard
	cond  *condition // how its last call went, logged when that changes
}

func newServers(node string, log *slog.Logger, obs Observer, newGuard func() *guard, quiet *silence) *servers {
	return &servers{node: node, log: log, obs: obs, newGuard: newGuard, quiet: quiet, at: map[int]string{}}
}

// guarded reports whether the servers have guards.
func (ss *servers) guarded() bool { return ss.newGuard != nil }

// of returns the server named name, as a reply names it ("" for a plain
// master), made on first use. The plain master, which every call to a plain
// node reaches, is found without a map.
func (ss *servers) of(name string) *server {
	if name == "" || name == ss.node {
		if s := ss.own.Load(); s != nil {
			return s
		}
		ss.own.CompareAndSwap(nil, ss.make(ss.node, ss.log))
		return ss.own.Load()
	}
	if s, ok := ss.by.Load(name); ok {
		return s.(*server)
	}
	s, _ := ss.by.LoadOrStore(name, ss.make(name, ss.log.With("node", ss.node)))
	return s.(*server)
}

func (ss *servers) make(addr string, log *slog.Logger) *server {
	s := &server{cond: &condition{log: log, addr: addr, obs: ss.obs}}
	if ss.newGuard != nil {
		s.guard = ss.newGuard()
	}
	return s
}

// lookup returns the server named name, or nil if none was made.
func (ss *servers) lookup(name string) *server {
	if name == "" || name == ss.node {
		return ss.own.Load()
	}
	s, _ := ss.by.Load(name)
	s1, _ := s.(*server)
	return s1
}

// answered takes what one call to the node learned: the guard's answers,
// a lost connection, a READONLY reply (the master may have become a
// replica), and how the call went. key is the call's first key, the lock
// key with its namespace. It returns err as the lock judges it: on a Redis
// Cluster node, a redirection is the cluster changing.
func (ss *servers) answered(key string, rep driver.Reply, err error, sharded bool) error {
	s := ss.of(rep.Server)
	if g := s.guard; g != nil {
		if rep.Server != "" {
			ss.mu.Lock()
			ss.at[slot.Of(key)] = rep.Server
			ss.mu.Unlock()
		}
		if rep.Lost {
			g.connectionLost()
		}
		if rep.Answers != nil {
			addr := rep.Server
			if addr == "" {
				addr = ss.node
			}
			g.observe(addr, info.RepliesOf(rep.Answers), rep.Dials)
		}
		if code(err) == "READONLY" {
			g.askAgain()
		}
	}
	if sharded {
		err = asClusterChange(err)
	}
	s.cond.note(err)
	ss.quiet.note(err)
	return err
}

// healthOf returns the health that judges a vote on key, a lock key with its
// namespace: the plain master's, or that of the shard master that last
// answered for key's slot. A shard never heard from may not vote. Without
// guards, every vote counts.
func (ss *servers) healthOf(key string) health {
	if !ss.guarded() {
		return health{}
	}
	ss.mu.Lock()
	name, cluster := ss.at[slot.Of(key)], len(ss.at) > 0
	ss.mu.Unlock()
	s := ss.lookup(name)
	if (cluster || name != "") && (s == nil || s.guard.state.Load() == nil) {
		return health{veto: "no health read of the shard master owning the key"}
	}
	if s == nil {
		return health{}
	}
	return s.guard.load()
}

// silence tells a master that answers nothing at all (paused, or cut off
// with its connection open) from one that is slow or busy. It is silent when
// its last call was sent and got no reply within its timeout, and no call
// got an answer for a while (the window the caller asks with): a busy
// master, whose calls time out among others answered, is not. Any answer,
// a Redis error too, clears it. A call that never reached the master (a
// dial that timed out, a caller that cancelled) says nothing of it.
type silence struct {
	clock      clock.Clock
	unanswered atomic.Bool  // the last call sent got no reply
	answeredAt atomic.Int64 // when a call last got an answer (UnixNano on clock); newSilence counts as one
}

func newSilence(clk clock.Clock) *silence {
	s := &silence{clock: clk}
	s.answeredAt.Store(clk.Now().UnixNano())
	return s
}

// note records the outcome of one call.
func (s *silence) note(err error) {
	if s == nil {
		return
	}
	switch {
	case err == nil || code(err) != "":
		s.answeredAt.Store(s.clock.Now().UnixNano())
		s.unanswered.Store(false)
	case errors.Is(err, context.Canceled) || dialFailed(err):
	case timedOut(err):
		s.unanswered.Store(true)
	default: // refused, reset: the master fails fast, it does not keep anyone waiting
		s.unanswered.Store(false)
	}
}

// silent reports whether the master is silent: its last call got no reply,
// and nothing has answered for window.
func (s *silence) silent(window time.Duration) bool {
	if s == nil || !s.unanswered.Load() {
		return false
	}
	return s.clock.Since(time.Unix(0, s.answeredAt.Load())) >= window
}

// dialFailed reports whether err is a failure to connect: the call never
// reached the master.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
