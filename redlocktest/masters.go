package redlocktest

import (
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// DefaultNodeTimeout is the node timeout of the clients Masters and
// Group.Client build, unless their options say otherwise.
const DefaultNodeTimeout = time.Second

// Group is the set of in-process masters that Masters started, tied to its
// test. Its methods are safe for concurrent use.
type Group struct {
	t       testing.TB
	servers *Servers
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
	s, err := Start(n)
	if err != nil {
		t.Fatalf("%v", err)
	}
	// Registered before the clients' Close, so it runs after them.
	t.Cleanup(s.Close)
	g := &Group{t: t, servers: s}
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
func (g *Group) Addrs() []string { return g.servers.Addrs() }

// Kill stops master i until Restart, as Servers.Kill does.
func (g *Group) Kill(i int) error { return g.servers.Kill(i) }

// Restart brings master i back with its keys, as Servers.Restart does.
func (g *Group) Restart(i int) error { return g.servers.Restart(i) }
