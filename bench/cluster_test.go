package bench

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/pool"
	"github.com/quorumlock/quorumlock/redlock"
)

// The settings every contender shares.
const (
	masters     = 5
	quorum      = masters/2 + 1
	lockTTL     = 10 * time.Second
	nodeTimeout = redlock.DefaultNodeTimeout // 50 ms, the floor's too
	slowDelay   = 20 * time.Millisecond
)

// cluster is five local redis-server masters, and a proxy that makes the
// first one answer slowDelay late.
type cluster struct {
	servers []*redistest.Server
	addrs   []string // direct to every master
	slow    []string // the same, but the first through the proxy
}

func startCluster(tb testing.TB) *cluster {
	tb.Helper()
	servers := redistest.Start(tb, masters, redistest.Ephemeral)
	p, err := NewDelayProxy(servers[0].Addr(), slowDelay)
	require.NoError(tb, err)
	tb.Cleanup(func() { p.Close() })
	c := &cluster{servers: servers, addrs: redistest.Addrs(servers)}
	c.slow = append([]string{p.Addr()}, c.addrs[1:]...)
	return c
}

// newQuorumLock is the library with the restart guard off: the servers are
// fresh, and would not vote for their first TTL otherwise.
func newQuorumLock(tb testing.TB, addrs []string) *QuorumLock {
	tb.Helper()
	c, err := redlock.NewFromAddrs(addrs, redlock.WithRestartGuard(0))
	require.NoError(tb, err)
	q := NewQuorumLock(c, lockTTL)
	tb.Cleanup(func() { q.Close() })
	return q
}

// newObservedQuorumLock is newQuorumLock with every acquire reported to o.
func newObservedQuorumLock(tb testing.TB, addrs []string, o *Observer) *QuorumLock {
	tb.Helper()
	pools := make([]pool.Pool, len(addrs))
	for i, a := range addrs {
		p, err := pool.New(a)
		require.NoError(tb, err)
		pools[i] = ObservedPool{P: p, O: o}
	}
	c, err := redlock.New(pools, redlock.WithRestartGuard(0))
	require.NoError(tb, err)
	q := NewQuorumLock(c, lockTTL)
	tb.Cleanup(func() {
		q.Close()
		for _, p := range pools {
			p.Close()
		}
	})
	return q
}

func newRedsync(tb testing.TB, addrs []string) *Redsync {
	tb.Helper()
	r := NewRedsyncFromAddrs(addrs, lockTTL)
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

func newFloor(tb testing.TB, addrs []string) *Floor {
	tb.Helper()
	f, err := NewFloorFromAddrs(addrs, nodeTimeout, lockTTL)
	require.NoError(tb, err)
	tb.Cleanup(func() { f.Close() })
	return f
}

// namedLocker is a contender with its name in the tables.
type namedLocker struct {
	Name string
	Locker
}

// contenders returns the contenders over addrs, in table order: the
// library, redsync, the floor, and the floor running the library's scripts
// (a diagnostic that splits the library's cost into client and masters).
func contenders(tb testing.TB, addrs []string) []namedLocker {
	return []namedLocker{
		{"quorumlock", newQuorumLock(tb, addrs)},
		{"redsync", newRedsync(tb, addrs)},
		{"floor", newFloor(tb, addrs)},
		{"floor-lua", newScriptedFloor(tb, addrs)},
	}
}

// warmUp opens connections and loads scripts, so that no run pays for them.
func warmUp(tb testing.TB, l Locker, prefix string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := RunSequential(ctx, l, DistinctKeys(prefix, 1000), 300, 5*time.Second)
	require.NoError(tb, err)
	// The first operations dial and load scripts, and may miss the node
	// timeout on a busy machine; most must succeed.
	require.Less(tb, r.Errors, r.Ops/2+1, "warm-up: %v", r.FirstErr)
}

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
// every 0 to 4 ms, for reference.
func contentionVariants(tb testing.TB, addrs []string, o *Observer) []variant {
	tb.Helper()
	eight := make([]Waiter, contenders8)
	for i := range eight {
		eight[i] = newObservedQuorumLock(tb, addrs, o)
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
// sends them: its lib.lua, a newline, then the script.
type scriptSources struct{ acquire, release string }

// libScripts reads the library's scripts from its source next to this module.
func libScripts(tb testing.TB) scriptSources {
	tb.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "redlock", "scripts", name))
		require.NoError(tb, err)
		return string(b)
	}
	lib := read("lib.lua")
	return scriptSources{acquire: lib + "\n" + read("acquire.lua"), release: lib + "\n" + read("release.lua")}
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

// cpuUsed returns the CPU time used so far by this process (the client
// side of every contender, and the delay proxy) and by the masters together.
func cpuUsed(tb testing.TB, addrs []string) (client, masters time.Duration) {
	tb.Helper()
	var u syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &u))
	client = time.Duration(u.Utime.Nano() + u.Stime.Nano())
	for _, a := range addrs {
		info, err := redis.String(do(tb, a, "INFO", "cpu"), nil)
		require.NoError(tb, err)
		for _, line := range strings.Split(info, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
				secs, err := strconv.ParseFloat(v, 64)
				require.NoError(tb, err)
				masters += time.Duration(secs * float64(time.Second))
			}
		}
	}
	return client, masters
}
