package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	goredisdriver "github.com/quorumlock/quorumlock/driver/goredis"
	"github.com/quorumlock/quorumlock/driver/redigo"
	rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// The settings every contender shares.
const (
	masters     = 5
	quorum      = masters/2 + 1
	lockTTL     = 10 * time.Second
	nodeTimeout = redlock.DefaultNodeTimeout // 50 ms, the floor's too
	slowDelay   = 20 * time.Millisecond
	lanDelay    = 250 * time.Microsecond
)

// testbed is five local redis-server masters, independent (no Redis
// Cluster), a proxy that makes the first one answer slowDelay late, and a
// proxy in front of each that makes every master lanDelay away; the proxies
// run in a process of their own.
type testbed struct {
	servers []*redistest.Server
	addrs   []string // direct to every master
	slow    []string // the same, but the first through the slow proxy
	lan     []string // every master through a lanDelay proxy
}

// startTestbed starts a testbed, stopped when the test ends.
func startTestbed(tb testing.TB) *testbed {
	tb.Helper()
	servers := redistest.Start(tb, masters, redistest.Ephemeral)
	c := &testbed{servers: servers, addrs: redistest.Addrs(servers)}
	specs := []string{fmt.Sprintf("%v=%s", slowDelay, c.addrs[0])}
	for _, a := range c.addrs {
		specs = append(specs, fmt.Sprintf("%v=%s", lanDelay, a))
	}
	proxies := startProxies(tb, specs...)
	c.slow = append([]string{proxies[0]}, c.addrs[1:]...)
	c.lan = proxies[1:]
	return c
}

// newPools returns a redigo.Redis per address, closed with the test.
func newPools(tb testing.TB, addrs []string) []*redigo.Redis {
	tb.Helper()
	ps := make([]*redigo.Redis, len(addrs))
	for i, a := range addrs {
		p, err := redigo.New(a)
		require.NoError(tb, err)
		tb.Cleanup(func() { p.Close() })
		ps[i] = p
	}
	return ps
}

// newQuorumLock is the library on its own driver, with the restart guard
// off: the servers are fresh, and would not vote for their first TTL
// otherwise.
// Its commands are counted in sent, when not nil.
func newQuorumLock(tb testing.TB, addrs []string, sent *atomic.Int64) *QuorumLock {
	tb.Helper()
	ps := newPools(tb, addrs)
	ms := make([]driver.Master, len(ps))
	for i, p := range ps {
		ms[i] = p
		if sent != nil {
			ms[i] = counted(p, sent)
		}
	}
	c, err := redlock.New(ms, redlock.WithRestartGuard(0))
	require.NoError(tb, err)
	q := NewQuorumLock(c, lockTTL)
	tb.Cleanup(func() { q.Close() }) // before the pools: cleanups run last first
	return q
}

// newObservedQuorumLock is newQuorumLock with every acquire reported to o.
func newObservedQuorumLock(tb testing.TB, addrs []string, o *Observer) *QuorumLock {
	tb.Helper()
	ps := newPools(tb, addrs)
	ms := make([]driver.Master, len(ps))
	for i, p := range ps {
		ms[i] = ObservedMaster{M: p, O: o}
	}
	c, err := redlock.New(ms, redlock.WithRestartGuard(0))
	require.NoError(tb, err)
	q := NewQuorumLock(c, lockTTL)
	tb.Cleanup(func() { q.Close() })
	return q
}

// newObservedAdapterQuorumLock is the library over the go-redis adapter
// (lib "goredis": a *goredis.Client per master) or the rueidis adapter
// ("rueidis": a rueidis client per master), on clients of its own, with
// every acquire reported to o; the restart guard is off, as in
// newQuorumLock.
func newObservedAdapterQuorumLock(tb testing.TB, lib string, addrs []string, o *Observer) *QuorumLock {
	tb.Helper()
	ms := make([]driver.Master, len(addrs))
	for i, a := range addrs {
		var (
			m   driver.Master
			err error
		)
		switch lib {
		case "goredis":
			m, err = goredisdriver.New(NewGoRedisClient(a), goredisdriver.WithCloseClient())
		case "rueidis":
			var c rueidis.Client
			if c, err = NewRueidisClient([]string{a}); err == nil {
				if m, err = rueidisdriver.New(c, rueidisdriver.WithCloseClient()); err != nil {
					c.Close()
				}
			}
		default:
			tb.Fatalf("no adapter %q", lib)
		}
		require.NoError(tb, err, "%s on %s", lib, a)
		tb.Cleanup(func() { m.Close() }) // after the client's: cleanups run last first
		ms[i] = ObservedMaster{M: m, O: o}
	}
	c, err := redlock.New(ms, redlock.WithRestartGuard(0))
	require.NoError(tb, err)
	q := NewQuorumLock(c, lockTTL)
	tb.Cleanup(func() { q.Close() })
	return q
}

// newRedsync is redsync on fresh pools, its commands counted in sent.
func newRedsync(tb testing.TB, addrs []string, sent *atomic.Int64, opts ...redsync.Option) *Redsync {
	tb.Helper()
	owned := make([]*redis.Pool, len(addrs))
	pools := make([]RedigoPool, len(addrs))
	for i, a := range addrs {
		owned[i] = NewRedigoPool(a)
		pools[i] = countedRedigoPool{owned[i], sent}
	}
	r := NewRedsync(pools, owned, lockTTL, opts...)
	tb.Cleanup(func() { r.Close() })
	return r
}

// newObservedRedsync is newRedsync with every acquire reported to o.
func newObservedRedsync(tb testing.TB, addrs []string, o *Observer) *Redsync {
	tb.Helper()
	owned := make([]*redis.Pool, len(addrs))
	pools := make([]RedigoPool, len(addrs))
	for i, a := range addrs {
		owned[i] = NewRedigoPool(a)
		pools[i] = ObservedRedigoPool{P: owned[i], O: o}
	}
	r := NewRedsync(pools, owned, lockTTL)
	tb.Cleanup(func() { r.Close() })
	return r
}

// newObservedRedsyncGoRedis is redsync with its go-redis v9 adapter, on a
// go-redis client per master (NewGoRedisClient), with every acquire
// reported to o.
func newObservedRedsyncGoRedis(tb testing.TB, addrs []string, o *Observer) *Redsync {
	tb.Helper()
	clients := make([]goredis.UniversalClient, len(addrs))
	for i, a := range addrs {
		c := NewGoRedisClient(a)
		observeGoRedis(c, o)
		clients[i] = c
	}
	r := NewRedsyncGoRedis(clients, lockTTL)
	tb.Cleanup(func() { r.Close() })
	return r
}

// newObservedRedsyncRueidis is redsync with its rueidis adapter, on a
// rueidis client per master (NewRueidisClient), with every acquire
// reported to o.
func newObservedRedsyncRueidis(tb testing.TB, addrs []string, o *Observer) *Redsync {
	tb.Helper()
	clients := make([]rueidis.Client, len(addrs))
	for i, a := range addrs {
		c, err := NewRueidisClient([]string{a})
		require.NoError(tb, err, "rueidis on %s", a)
		clients[i] = ObservedRueidis{c, o}
	}
	r := NewRedsyncRueidis(clients, lockTTL)
	tb.Cleanup(func() { r.Close() })
	return r
}

func newFloor(tb testing.TB, addrs []string) *Floor {
	tb.Helper()
	f, err := NewFloorFromAddrs(addrs, nodeTimeout, lockTTL)
	require.NoError(tb, err)
	tb.Cleanup(func() { f.Close() })
	return f
}

// newPipelinedFloor is the floor on the library's pipelined connections:
// the ceiling of what a pipelined client can do.
func newPipelinedFloor(tb testing.TB, addrs []string) *Floor {
	tb.Helper()
	f, err := NewPipelinedFloor(newPools(tb, addrs), nodeTimeout, lockTTL)
	require.NoError(tb, err)
	tb.Cleanup(func() { f.Close() })
	return f
}

// namedLocker is a contender with its name in the tables, and the count
// of the commands it has sent.
type namedLocker struct {
	Name string
	Locker
	Sent *atomic.Int64
}

// coreNames are the contenders of every scenario on the five masters, in
// table order.
func coreNames() []string {
	return []string{
		"quorumlock", "redsync", "redsync-failfast",
		"floor", "floor-pipelined", "floor-lua", "floor-lua-pipelined",
	}
}

// allNames are coreNames with the contenders over other client libraries,
// which join the sequential and 64-goroutine runs on healthy masters, in
// table order.
func allNames() []string {
	return []string{
		"quorumlock", "quorumlock-goredis", "quorumlock-rueidis",
		"redsync", "redsync-failfast", "redsync-goredis", "redsync-rueidis",
		"floor", "floor-pipelined", "floor-lua", "floor-lua-pipelined",
	}
}

// contenders returns the named contenders over addrs, in the order given:
// the library on its own driver (redigo.New); the library over
// the go-redis and the rueidis adapters; redsync as it comes, with
// WithFailFast(true), which returns at quorum as the others do, and over
// its go-redis v9 and rueidis adapters; the floor and the floor running the library's
// scripts (a diagnostic that splits the library's cost into client and
// masters), each on redigo pools and on the library's pipelined
// connections.
func contenders(tb testing.TB, addrs []string, names []string) []namedLocker {
	cs := make([]namedLocker, len(names))
	for i, name := range names {
		n := new(atomic.Int64)
		var l Locker
		switch name {
		case "quorumlock":
			l = newQuorumLock(tb, addrs, n)
		case "redsync":
			l = newRedsync(tb, addrs, n)
		case "redsync-failfast":
			l = newRedsync(tb, addrs, n, redsync.WithFailFast(true))
		case "floor", "floor-pipelined", "floor-lua", "floor-lua-pipelined":
			f := map[string]func(testing.TB, []string) *Floor{
				"floor": newFloor, "floor-pipelined": newPipelinedFloor,
				"floor-lua": newScriptedFloor, "floor-lua-pipelined": newPipelinedScriptedFloor,
			}[name](tb, addrs)
			f.countCommands(n)
			l = f
		default:
			l = newNodeContender(tb, name, standaloneNodes(addrs), n)
		}
		cs[i] = namedLocker{name, l, n}
	}
	return cs
}

// warmUp opens connections and loads scripts, so that no run pays for them.
func warmUp(tb testing.TB, l Locker, prefix string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The first operations dial and load scripts, and may miss the node
	// timeout on a busy machine, or behind the backlog a contender before
	// left on the masters; most of one try of three must succeed.
	var r *SeqResult
	for try := range 3 {
		var err error
		r, err = RunSequential(ctx, l, DistinctKeys(fmt.Sprintf("%s:%d", prefix, try), 1000), 300, 5*time.Second)
		require.NoError(tb, err)
		if r.Errors < r.Ops/2+1 {
			return
		}
		time.Sleep(time.Second)
	}
	tb.Fatalf("warm-up: %d of %d failed: %v", r.Errors, r.Ops, r.FirstErr)
}

// settle waits for what a run left in flight (stragglers, roll-backs, the
// masters' backlog) to land before the next run starts.
func settle() { time.Sleep(5 * nodeTimeout) }

// do runs one command on one master, outside any contender.
func do(tb testing.TB, addr, cmd string, args ...any) any {
	tb.Helper()
	c, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(time.Second),
		redis.DialReadTimeout(time.Second), redis.DialWriteTimeout(time.Second))
	require.NoError(tb, err)
	defer c.Close()
	v, err := c.Do(cmd, args...)
	require.NoError(tb, err)
	return v
}

// value returns key's value on the master at addr, or "" if it has none.
func value(tb testing.TB, addr, key string) string {
	tb.Helper()
	v, err := redis.String(do(tb, addr, "GET", key), nil)
	if err == redis.ErrNil {
		return ""
	}
	require.NoError(tb, err)
	return v
}

// exists reports whether the master at addr has key, of any type.
func exists(tb testing.TB, addr, key string) bool {
	tb.Helper()
	n, err := redis.Int(do(tb, addr, "EXISTS", key), nil)
	require.NoError(tb, err)
	return n == 1
}

// variant is one way of contending: the goroutines' waiters.
type variant struct {
	name    string
	waiters []Waiter
}

// contenders8 is how many goroutines contend for one key.
const contenders8 = 8

// contentionVariants returns the contended set-ups, each observed by o:
// quorumlock with one shared client and with one client per goroutine (as
// separate processes would), redsync as it comes, and redsync retrying
// every 0 to 4 ms, for reference; then, for the go-redis and the rueidis
// client libraries, quorumlock with one client per goroutine over that
// library's adapter, each client on go-redis or rueidis clients of its
// own, and redsync over its adapter for that library, one instance for
// the goroutines as redsync's row on redigo.
func contentionVariants(tb testing.TB, addrs []string, o *Observer) []variant {
	tb.Helper()
	eight := make([]Waiter, contenders8)
	eightGoRedis := make([]Waiter, contenders8)
	eightRueidis := make([]Waiter, contenders8)
	for i := range eight {
		eight[i] = newObservedQuorumLock(tb, addrs, o)
		eightGoRedis[i] = newObservedAdapterQuorumLock(tb, "goredis", addrs, o)
		eightRueidis[i] = newObservedAdapterQuorumLock(tb, "rueidis", addrs, o)
	}
	fast := newObservedRedsync(tb, addrs, o)
	fast.opts = append(fast.opts, redsync.WithTries(1<<20), redsync.WithRetryDelayFunc(func(int) time.Duration {
		return rand.N(4*time.Millisecond + 1)
	}))
	vs := []variant{
		{"quorumlock-shared", repeat(newObservedQuorumLock(tb, addrs, o), contenders8)},
		{"quorumlock-8clients", eight},
		{"redsync", repeat(newObservedRedsync(tb, addrs, o), contenders8)},
		{"redsync-retry4ms", repeat(fast, contenders8)},
		{"quorumlock-goredis-8clients", eightGoRedis},
		{"redsync-goredis", repeat(newObservedRedsyncGoRedis(tb, addrs, o), contenders8)},
		{"quorumlock-rueidis-8clients", eightRueidis},
		{"redsync-rueidis", repeat(newObservedRedsyncRueidis(tb, addrs, o), contenders8)},
	}
	for _, v := range vs { // connections and subscriptions up
		key := "warm:" + v.name
		o.Reset(key, time.Now())
		_, err := RunContention(context.Background(), ContentionConfig{
			Key: key, Waiters: v.waiters, Duration: 500 * time.Millisecond, MaxLocks: 200, Quorum: quorum,
		})
		require.NoError(tb, err)
	}
	return vs
}

// residue counts the masters where key is still set once deletes in flight
// have had time to land: a release or roll-back takes at most two node
// timeouts (the acquire it waits for, then the delete), so it waits five.
// It logs what it finds.
func residue(tb testing.TB, addrs []string, key string) int {
	tb.Helper()
	time.Sleep(5 * nodeTimeout)
	n := 0
	for _, a := range addrs {
		if v := value(tb, a, key); v != "" {
			n++
			tb.Logf("residue: %s holds %s=%s, PTTL %v ms", a, key, v, do(tb, a, "PTTL", key))
		}
	}
	return n
}

// scriptSources are quorumlock's acquire and release scripts as the library
// sends them: its lib.lua, a newline, then the script; and lib.lua alone.
type scriptSources struct{ lib, acquire, release string }

// libScripts reads the library's scripts from its source next to this module.
func libScripts(tb testing.TB) scriptSources {
	tb.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "redlock", "internal", "scripts", name))
		require.NoError(tb, err)
		return string(b)
	}
	lib := read("lib.lua")
	return scriptSources{lib: lib, acquire: lib + "\n" + read("acquire.lua"), release: lib + "\n" + read("release.lua")}
}

// newScriptedFloor is the floor running the library's own scripts.
func newScriptedFloor(tb testing.TB, addrs []string) *Floor {
	tb.Helper()
	src := libScripts(tb)
	pools := make([]*redis.Pool, len(addrs))
	for i, a := range addrs {
		pools[i] = NewRedigoPool(a)
	}
	f, err := NewScriptedFloor(pools, nodeTimeout, lockTTL, src.acquire, src.release)
	require.NoError(tb, err)
	tb.Cleanup(func() { f.Close() })
	return f
}

// newPipelinedScriptedFloor is newScriptedFloor on pipelined connections.
func newPipelinedScriptedFloor(tb testing.TB, addrs []string) *Floor {
	tb.Helper()
	src := libScripts(tb)
	f, err := NewPipelinedScriptedFloor(newPools(tb, addrs), nodeTimeout, lockTTL, src.acquire, src.release)
	require.NoError(tb, err)
	tb.Cleanup(func() { f.Close() })
	return f
}
