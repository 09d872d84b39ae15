package scenario

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock"
	"github.com/quorumlock/quorumlock/internal/slot"
	"github.com/quorumlock/quorumlock/redlock"
)

// What the suite reads on the masters themselves, past every link fault,
// about a lock that Do holds: Do hands its function neither the lock's fence
// nor its validity.

// floorKey is where a plain master keeps its fence floor (see the library's
// scripts): every grant there counts one above it, or the attempt's
// proposal, and raises it to that count, and a fence raise raises it. A
// plain lock keeps no counter of its own, so in a run that locks one key the
// floor of a master that holds the token is that grant's count, raised
// maybe to the fence: no other grant can move it while the token holds the
// key there.
const floorKey = "quorumlock:fence-floor"

// slotTag is the hash tag the library puts in every name it derives from
// key (see the library's scripts.Names), so that they share key's Redis
// Cluster slot: braces around a five-letter tag of that slot.
func slotTag(key string) string {
	t, _ := slot.TagFor(slot.Of(key))
	return "{" + t + "}"
}

// channelOf is where releases of key are announced.
func channelOf(key string) string { return "quorumlock:released:" + slotTag(key) + key }

// counterIfHeld returns the master's fence floor (KEYS[2]) if token holds
// the key (KEYS[1]), and false otherwise.
const counterIfHeld = `
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return false end
return redis.call('GET', KEYS[2])`

// expiryIfHeld returns the key's expiry, in Unix milliseconds on the
// master's clock, if token holds the key, and false otherwise.
const expiryIfHeld = `
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return false end
return redis.call('PEXPIRETIME', KEYS[1])`

// readTimeout bounds one read from one master, so that a paused master
// costs no more.
const readTimeout = 300 * time.Millisecond

// evalOn runs script on every master in addrs at once, each within
// readTimeout, and returns the replies of the masters that answered with a
// value; a master that did not answer, or where token does not hold the
// key, has no entry.
func evalOn(ctx context.Context, addrs map[int]string, script string, keys []any, token string) map[int]int64 {
	var mu sync.Mutex
	out := map[int]int64{}
	var wg sync.WaitGroup
	for n, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, readTimeout)
			defer cancel()
			conn, err := redis.DialContext(ctx, "tcp", a)
			if err != nil {
				return
			}
			defer conn.Close()
			args := append([]any{script, len(keys)}, keys...)
			v, err := redis.DoWithTimeout(conn, readTimeout, "EVAL", append(args, token)...)
			if err != nil || v == nil {
				return
			}
			x, err := redis.Int64(v, nil) // an integer, or a counter as a string
			if err != nil {
				return
			}
			mu.Lock()
			out[n] = x
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// fenceOnMasters returns the fence of the lock that token holds on key,
// and the masters that hold the token.
//
// Before a lock is handed out, the library raises the fence floor of enough
// masters of its quorum to the fence that at least a quorum of masters
// holding the token count exactly the fence; and while the token holds the
// key on a master, no grant there moves its floor, in a run that locks one
// key (see floorKey). Masters that
// granted later, outside the quorum, may count anything, but they are fewer
// than a quorum. So the fence is the one count that a quorum of the masters
// holding the token agree on; if no count has a quorum (a master of the
// quorum does not answer), the fence is unknown.
func fenceOnMasters(ctx context.Context, addrs []string, key, token string, quorum int) (int64, []int, bool) {
	all := map[int]string{}
	for n, a := range addrs {
		all[n] = a
	}
	counters := evalOn(ctx, all, counterIfHeld, []any{key, floorKey}, token)
	holding := make([]int, 0, len(counters))
	counts := map[int64]int{}
	for n, c := range counters {
		holding = append(holding, n)
		counts[c]++
	}
	slices.Sort(holding)
	for c, n := range counts {
		if n >= quorum {
			return c, holding, true
		}
	}
	return 0, holding, false
}

// validityBound returns a time by which the validity of the lock that token
// holds on key has ended, on the run's clock, given masters (cut) that its
// holder can no longer reach, more than the masters it can.
//
// The lock's validity ends at start + ttl - reserve, where start is when
// the last acquisition or extension that reached a quorum began. That
// quorum includes a cut master, where the request arrived after start and
// set the key's expiry to its arrival + ttl; later requests only move the
// expiry on. So the validity ends at the latest expiry among the cut
// masters, less the drift reserve, or before. Redis stores expiries in
// whole milliseconds, rounded down, hence one millisecond more. The masters
// share the host's clock with the suite.
func validityBound(ctx context.Context, e *Env, key, token string, cut []int, ttl time.Duration) (time.Duration, error) {
	addrs := map[int]string{}
	for _, n := range cut {
		addrs[n] = e.Cluster.Direct(n)
	}
	exp := evalOn(ctx, addrs, expiryIfHeld, []any{key}, token)
	if len(exp) == 0 {
		return 0, errors.New("no cut master holds the token")
	}
	var latest int64
	for _, ms := range exp {
		latest = max(latest, ms)
	}
	reserve := quorumlock.Drift{Factor: redlock.DefaultDriftFactor, Margin: redlock.DefaultDriftMargin}.Reserve(ttl)
	return e.History.At(time.UnixMilli(latest)) + time.Millisecond - reserve, nil
}

// fenceReader returns the workload's FenceOf for a run: the fence read from
// every master directly. Lock returns at a quorum, so grants to the other
// masters may still be on their way: where not every master holds the
// token yet, it reads again a node timeout later, by which those that will
// land have landed, so that the masters it names are the lock's.
func fenceReader(addrs []string, key string, quorum int, nodeTimeout time.Duration) func(context.Context, string) (int64, []int, bool) {
	return func(ctx context.Context, token string) (int64, []int, bool) {
		ctx = context.WithoutCancel(ctx)
		fence, holding, known := fenceOnMasters(ctx, addrs, key, token, quorum)
		if len(holding) < len(addrs) {
			time.Sleep(nodeTimeout)
			fence, holding, known = fenceOnMasters(ctx, addrs, key, token, quorum)
		}
		return fence, holding, known
	}
}
