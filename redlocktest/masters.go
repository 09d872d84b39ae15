package redlocktest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/quorumlock/quorumlock/redlock"
)

// DefaultNodeTimeout is the node timeout of the clients Masters and
// Group.Client build, unless their options say otherwise.
const DefaultNodeTimeout = time.Second

// Group is the set of in-process masters that Masters started. Its methods
// are safe for concurrent use.
type Group struct {
	t       testing.TB
	mu      sync.Mutex
	masters []*miniredis.Miniredis
	up      []bool
	addrs   []string
}

// Masters starts n in-process masters on free loopback ports and returns a
// client over them, built with opts, and the Group of masters. n must be at
// least 1. When the test ends, the client is closed and the masters are
// stopped; the test fails at once if a master cannot be started or the client
// cannot be built.
//
// The client trusts the masters though it cannot read their state, which
// they do not report (see the package documentation); waits up to
// DefaultNodeTimeout for each master; and logs what it reports at warning
// level and above through t.Log. opts come after those and may override
// them, for example with redlock.WithLogger. As on any client, a lock's node
// timeout is at most a tenth of its TTL: give locks in tests TTLs of a
// second or more.
func Masters(t testing.TB, n int, opts ...redlock.Option) (*redlock.Client, *Group) {
	t.Helper()
	if n < 1 {
		t.Fatalf("redlocktest: %d masters; at least 1 is needed", n)
	}
	g := &Group{t: t}
	t.Cleanup(g.close)
	for range n {
		m := miniredis.NewMiniRedis()
		// Without ClockTTL miniredis expires keys only when told to
		// FastForward; a lock's TTL must run on its own.
		m.ClockTTL(true)
		if err := m.Start(); err != nil {
			t.Fatalf("redlocktest: starting an in-process master: %v", err)
		}
		g.masters = append(g.masters, m)
		g.up = append(g.up, true)
		g.addrs = append(g.addrs, m.Addr())
	}
	return g.Client(opts...), g
}

// Client returns another client over the group's masters, built with opts
// as Masters builds its own: a second process, say, that contends for the
// same keys. It is closed when the test ends. Call it from the test's
// goroutine: it fails the test if the client cannot be built.
func (g *Group) Client(opts ...redlock.Option) *redlock.Client {
	g.t.Helper()
	all := append([]redlock.Option{
		// miniredis reports no uptime, run_id or role: the guard cannot
		// read it, and keeps out a master it cannot read unless trusted.
		redlock.WithTrustUnreadable(),
		// A miniredis master runs each script in a Lua interpreter written
		// in Go; under the race detector on a busy machine its answers
		// often take longer than redlock's 50ms.
		redlock.WithNodeTimeout(DefaultNodeTimeout),
		redlock.WithLogger(testLogger(g.t)),
	}, opts...)
	c, err := redlock.NewFromAddrs(g.Addrs(), all...)
	if err != nil {
		g.t.Fatalf("redlocktest: a client over the in-process masters: %v", err)
	}
	g.t.Cleanup(func() { c.Close() })
	return c
}

// Addrs returns the masters' addresses, "127.0.0.1:port", in the order
// Kill and Restart number them from 0.
func (g *Group) Addrs() []string {
	return append([]string(nil), g.addrs...)
}

// Kill stops master i: its listener and every connection to it are closed,
// and its clients see connections refused until Restart. Killing a master
// that is down does nothing. An i outside the group gets an error matching
// redlock.ErrInvalid.
func (g *Group) Kill(i int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.check(i); err != nil {
		return err
	}
	if g.up[i] {
		g.masters[i].Close()
		g.up[i] = false
	}
	return nil
}

// Restart brings master i back on its port with the keys it had when it was
// killed, and the TTLs they had left less the time it was down. Restarting a
// master that is up does nothing. It fails if another process took the port
// meanwhile. An i outside the group gets an error matching redlock.ErrInvalid.
func (g *Group) Restart(i int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.check(i); err != nil {
		return err
	}
	if g.up[i] {
		return nil
	}
	if err := g.masters[i].Restart(); err != nil {
		return fmt.Errorf("redlocktest: restarting master %d on %s: %w", i, g.addrs[i], err)
	}
	g.up[i] = true
	return nil
}

// check returns an error for a master number outside the group; under mu.
func (g *Group) check(i int) error {
	if i < 0 || i >= len(g.masters) {
		return fmt.Errorf("%w: master %d of a group of %d (numbered from 0)", redlock.ErrInvalid, i, len(g.masters))
	}
	return nil
}

// close stops every master that is up; t.Cleanup runs it after the
// clients' Close, which were registered later.
func (g *Group) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, m := range g.masters {
		if g.up[i] {
			m.Close()
			g.up[i] = false
		}
	}
}
