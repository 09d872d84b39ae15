package redlock

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// The script contract: one table of sequences, each run on the in-memory
// fake master that the algorithm's tests use and on real redis-servers (the
// current release and 6.0, the oldest supported) running the Lua scripts
// through the driver. Both must give the same
// answers, so the fake cannot drift from the scripts.

// step is one script run of a contract sequence, and what it must answer.
type step struct {
	op                  string // acquire, extend, release, fence, inspect, wait (3 ms)
	key                 string // "k" when empty
	token, owner, from  string
	ttl                 time.Duration // 10s when zero
	rollback, tombstone bool
	fence               string // fence: "<label>+<n>", a counter seen earlier plus n
	propose             string // acquire: "<label>+<n>", the attempt's proposal for a new count
	permits             int    // a semaphore's permit of K permits (the permit scripts); 0 for a lock
	read                bool   // a read hold of an RWLock (read.lua, then the permit scripts)
	keys                string // a set of keys taken together (the set's scripts), comma-separated; "" for a lock

	// What must come back.
	ok       bool             // acquire: granted; fence: raised; inspect: the token (with owner) holds the key
	tookOver bool             // acquire
	holder   string           // acquire when refused, and inspect: a token, "owner:<o>", or ""
	pttl     string           // acquire when refused, and inspect: "live", "long" (> 5s), "rolled back", "no key"
	counter  string           // acquire and inspect: "new" (above every counter seen), "=<label>[+<n>]", ">=<label>+<n>", "new<<label>+<n>" (new, and below)
	label    string           // names this step's counter for later steps
	extended scripts.Extended // extend
	released scripts.Released // release
	holds    int              // inspect
	recorded int64            // acquire refused with pttl "permits differ": the K the key's record names
}

var contract = []struct {
	name  string
	steps []step
}{
	{"a free key is granted; another token is refused and told the holder", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "acquire", token: "b", holder: "a", pttl: "live"},
		{op: "inspect", holder: "a", holds: 1, pttl: "live", counter: "=a"},
	}},
	{"a retried acquire that already landed is granted with the same counter", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "acquire", token: "a", ok: true, counter: "=a"},
	}},
	{"extend: renewed by the holder, lapsed for another, vacant once free", []step{
		{op: "acquire", token: "a", ok: true, counter: "new"},
		{op: "extend", token: "a", extended: scripts.Renewed},
		{op: "extend", token: "b", extended: scripts.Lapsed},
		{op: "release", token: "a", released: scripts.Freed},
		{op: "extend", token: "a", extended: scripts.Vacant},
	}},
	{"release: only the holder frees the key, once", []step{
		{op: "acquire", token: "a", ok: true, counter: "new"},
		{op: "release", token: "b", released: scripts.NotHeld},
		{op: "release", token: "a", released: scripts.Freed},
		{op: "release", token: "a", released: scripts.NotHeld},
		{op: "inspect", holder: "", pttl: "no key"},
	}},
	{"a plain release leaves no tombstone: the token may take the key again", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "release", token: "a", released: scripts.Freed},
		{op: "acquire", token: "a", ok: true, counter: "new"},
	}},
	{"a roll-back frees the key and turns away the token's late acquire", []step{
		{op: "acquire", token: "a", ok: true, counter: "new"},
		{op: "release", token: "a", rollback: true, released: scripts.Freed},
		{op: "acquire", token: "a", pttl: "rolled back"},
		{op: "inspect", holder: "", pttl: "no key"},
		{op: "acquire", token: "b", ok: true, counter: "new"},
	}},
	{"a roll-back where the token never landed still leaves its tombstone", []step{
		{op: "release", token: "a", rollback: true, released: scripts.NotHeld},
		{op: "acquire", token: "a", pttl: "rolled back"},
		{op: "inspect", holder: "", pttl: "no key"},
	}},
	{"a release asked for a tombstone leaves one", []step{
		{op: "acquire", token: "a", ok: true, counter: "new"},
		{op: "release", token: "a", tombstone: true, released: scripts.Freed},
		{op: "acquire", token: "a", pttl: "rolled back"},
	}},
	{"a hand-over passes the key without freeing it, and the old token loses it", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "acquire", token: "b", from: "a", ok: true, tookOver: true, counter: "new", label: "b"},
		{op: "inspect", holder: "b", holds: 1, pttl: "live", counter: "=b"},
		{op: "extend", token: "a", extended: scripts.Lapsed},
		{op: "acquire", token: "c", from: "a", holder: "b", pttl: "live"},
	}},
	{"a hand-over to a rolled-back token does not land", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "release", token: "b", rollback: true, released: scripts.NotHeld},
		{op: "acquire", token: "b", from: "a", pttl: "rolled back", holder: "a"},
		{op: "inspect", holder: "a", holds: 1, pttl: "live", counter: "=a"},
	}},
	{"a hand-over from a token that does not hold the key is an acquire", []step{
		{op: "acquire", token: "b", from: "a", ok: true, counter: "new"},
	}},
	{"reentrant: holds of one owner share the key until the last is released", []step{
		{op: "acquire", token: "a", owner: "o", ok: true, counter: "new", label: "o"},
		{op: "acquire", token: "b", owner: "o", ok: true, counter: "=o"},
		{op: "acquire", token: "c", owner: "p", holder: "owner:o", pttl: "live"},
		{op: "acquire", token: "d", holder: "owner:o", pttl: "live"},
		{op: "inspect", holder: "owner:o", holds: 2, pttl: "live", counter: "=o"},
		{op: "release", token: "a", owner: "o", released: scripts.StillHeld},
		{op: "extend", token: "a", owner: "o", extended: scripts.Lapsed},
		{op: "extend", token: "b", owner: "o", extended: scripts.Renewed},
		{op: "inspect", holder: "owner:o", holds: 1, pttl: "live"},
		{op: "release", token: "b", owner: "o", released: scripts.Freed},
		{op: "inspect", holder: "", pttl: "no key"},
	}},
	{"plain: an extension never shortens the TTL: one that lands after a later one cannot cut it", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "extend", token: "a", ttl: time.Second, extended: scripts.Renewed},
		{op: "inspect", holder: "a", holds: 1, pttl: "long", counter: "=a"},
		{op: "acquire", token: "b", holder: "a", pttl: "long"},
	}},
	{"reentrant: an extension never shortens the other holds' TTL", []step{
		{op: "acquire", token: "a", owner: "o", ok: true, counter: "new"},
		{op: "extend", token: "a", owner: "o", ttl: time.Second, extended: scripts.Renewed},
		{op: "inspect", holder: "owner:o", holds: 1, pttl: "long"},
	}},
	{"reentrant: a later hold reports its lock's counter, though another key's grant moved the floor", []step{
		{op: "acquire", token: "a", owner: "o", ok: true, counter: "new", label: "o"},
		{op: "acquire", key: "other", token: "x", ok: true, counter: "new"},
		{op: "acquire", token: "b", owner: "o", ok: true, counter: "=o"},
	}},
	{"reentrant: a hold whose attempt was rolled back does not land", []step{
		{op: "acquire", token: "a", owner: "o", ok: true, counter: "new", label: "o"},
		{op: "release", token: "b", owner: "o", rollback: true, released: scripts.NotHeld},
		{op: "acquire", token: "b", owner: "o", pttl: "rolled back"},
		{op: "inspect", holder: "owner:o", holds: 1, pttl: "live", counter: "=o"},
	}},
	{"reentrant: a first hold whose attempt was rolled back does not land", []step{
		{op: "release", token: "a", owner: "o", rollback: true, released: scripts.NotHeld},
		{op: "acquire", token: "a", owner: "o", pttl: "rolled back"},
		{op: "inspect", holder: "", pttl: "no key"},
	}},
	{"a plain lock refuses a reentrant acquire, and the other way round", []step{
		{op: "acquire", token: "a", ok: true, counter: "new"},
		{op: "acquire", token: "b", owner: "o", holder: "a", pttl: "live"},
		{op: "release", token: "a", released: scripts.Freed},
		{op: "acquire", token: "c", owner: "o", ok: true, counter: "new"},
		{op: "acquire", token: "d", holder: "owner:o", pttl: "live"},
		{op: "release", token: "c", released: scripts.NotHeld},
	}},
	{"a fence raise by the holder carries into the next holder's counter", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "fence", token: "b", fence: "a+1000", ok: false},
		{op: "fence", token: "a", fence: "a+1000", ok: true},
		{op: "inspect", holder: "a", holds: 1, pttl: "live", counter: ">=a+1000"},
		{op: "release", token: "a", released: scripts.Freed},
		{op: "acquire", token: "b", ok: true, counter: ">=a+1001"},
	}},
	{"a release by the holder raises the fence first", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "release", token: "b", fence: "a+1000", released: scripts.NotHeld},
		{op: "inspect", holder: "a", holds: 1, pttl: "live", counter: "=a"},
		{op: "release", token: "a", fence: "a+1000", released: scripts.Freed},
		{op: "acquire", token: "b", ok: true, counter: ">=a+1001"},
	}},
	{"a reentrant release raises the fence though other holds stay", []step{
		{op: "acquire", token: "a", owner: "o", ok: true, counter: "new", label: "o"},
		{op: "acquire", token: "b", owner: "o", ok: true, counter: "=o"},
		{op: "release", token: "a", owner: "o", fence: "o+7", released: scripts.StillHeld},
		{op: "inspect", holder: "owner:o", holds: 1, pttl: "live", counter: "=o+7"},
	}},
	{"a fence raise never lowers the counter", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "fence", token: "a", fence: "a+0", ok: true},
		{op: "inspect", holder: "a", holds: 1, pttl: "live", counter: "=a"},
	}},
	{"a proposal above the count, and not above the master's clock, is the count", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "release", token: "a", released: scripts.Freed},
		{op: "wait"}, // the master's clock seed moves 1024 per millisecond, past a+1000
		{op: "acquire", token: "b", propose: "a+1000", ok: true, counter: "=a+1000"},
		{op: "release", token: "b", released: scripts.Freed},
		{op: "acquire", token: "c", propose: "a+5", ok: true, counter: "=a+1001"},
	}},
	{"a proposal above the master's clock is cut at the clock", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "release", token: "a", released: scripts.Freed},
		{op: "acquire", token: "b", propose: "a+4503599627370496", ok: true, counter: "new<a+4503599627370496"},
	}},
	{"a hand-over takes a proposal as a grant does", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "wait"},
		{op: "acquire", token: "b", from: "a", propose: "a+1000", ok: true, tookOver: true, counter: "=a+1000"},
	}},
	{"inspect finds a plain lock's token, and no other", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "inspect", token: "a", ok: true, holder: "a", holds: 1, pttl: "live", counter: "=a"},
		{op: "inspect", token: "b", holder: "a", holds: 1, pttl: "live", counter: "=a"},
		{op: "inspect", token: "a", owner: "o", holder: "a", holds: 1, pttl: "live", counter: "=a"},
		{op: "release", token: "a", released: scripts.Freed},
		{op: "inspect", token: "a", holder: "", pttl: "no key"},
	}},
	{"inspect finds a reentrant lock's hold, and no other", []step{
		{op: "acquire", token: "a", owner: "o", ok: true, counter: "new", label: "o"},
		{op: "acquire", token: "b", owner: "o", ok: true, counter: "=o"},
		{op: "inspect", token: "b", owner: "o", ok: true, holder: "owner:o", holds: 2, pttl: "live", counter: "=o"},
		{op: "inspect", token: "b", owner: "p", holder: "owner:o", holds: 2, pttl: "live", counter: "=o"},
		{op: "inspect", token: "b", holder: "owner:o", holds: 2, pttl: "live", counter: "=o"},
		{op: "release", token: "b", owner: "o", released: scripts.StillHeld},
		{op: "inspect", token: "b", owner: "o", holder: "owner:o", holds: 1, pttl: "live", counter: "=o"},
		{op: "inspect", token: "a", owner: "o", ok: true, holder: "owner:o", holds: 1, pttl: "live", counter: "=o"},
	}},
	{"a plain lock's record keeps its grant's counter, though another key's grant moved the floor", []step{
		{op: "acquire", token: "a", ok: true, counter: "new", label: "a"},
		{op: "acquire", key: "other", token: "x", ok: true, counter: "new"},
		{op: "inspect", token: "a", ok: true, holder: "a", holds: 1, pttl: "live", counter: "=a"},
		{op: "fence", token: "a", fence: "a+5", ok: true},
		{op: "acquire", key: "other2", token: "y", ok: true, counter: "new"},
		{op: "inspect", token: "a", ok: true, holder: "a", holds: 1, pttl: "live", counter: "=a+5"},
		{op: "acquire", token: "b", from: "a", ok: true, tookOver: true, counter: "new", label: "b"},
		{op: "acquire", key: "other3", token: "z", ok: true, counter: "new"},
		{op: "inspect", token: "b", ok: true, holder: "b", holds: 1, pttl: "live", counter: "=b"},
		{op: "release", token: "b", fence: "b+7", released: scripts.Freed},
		{op: "acquire", token: "c", ok: true, counter: ">=b+8"},
	}},
	{"counters grow from one holder to the next", []step{
		{op: "acquire", token: "a", ok: true, counter: "new"},
		{op: "release", token: "a", released: scripts.Freed},
		{op: "acquire", token: "b", owner: "o", ok: true, counter: "new"},
		{op: "release", token: "b", owner: "o", released: scripts.Freed},
		{op: "acquire", token: "c", ok: true, counter: "new"},
	}},
}

func TestContract_Scripts(t *testing.T) {
	real := client(t, masters(t, 1)).nodes[0].(*master)
	var old *master
	if !aclSuite() { // Redis 6.0 has no ACL rules for channels, which the suite's user needs
		old = client(t, masters60(t, 1)).nodes[0].(*master)
	}
	on := func(m *master, ns string) func() node {
		return func() node {
			c := *m
			c.names = scripts.Names{NS: ns} // a fresh master, as far as the scripts can tell
			return &c
		}
	}
	for i, tc := range slices.Concat(contract, permitContract, rwContract, allContract) {
		backends := []struct {
			name string
			node func() node
		}{
			{"fake", func() node { return newFakeNode("fake", clock.NewFake(time.Unix(1_000_000, 0)), healthy) }},
			{"redis", on(real, suiteNames().NS+fmt.Sprintf("contract-%d:", i))},
			{"redis-6.0", on(old, suiteNames().NS+fmt.Sprintf("contract-%d:", i))},
		}
		if old == nil {
			backends = backends[:2]
		}
		for _, b := range backends {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				runContract(t, b.node(), tc.steps)
			})
		}
	}
}

func runContract(t *testing.T, n node, steps []step) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counters := map[string]int64{}
	var top int64
	counted := func(at int, s step, got int64) {
		switch {
		case s.counter == "new":
			assert.Greater(t, got, top, "step %d: a new counter, above every one before", at)
		case strings.HasPrefix(s.counter, "new<"):
			assert.Greater(t, got, top, "step %d: a new counter, above every one before", at)
			assert.Less(t, got, offset(t, counters, s.counter[4:]), "step %d: counter %s", at, s.counter)
		case strings.HasPrefix(s.counter, "="):
			want := s.counter[1:]
			if !strings.Contains(want, "+") {
				want += "+0"
			}
			assert.Equal(t, offset(t, counters, want), got, "step %d: counter %s", at, s.counter)
		case strings.HasPrefix(s.counter, ">="):
			assert.GreaterOrEqual(t, got, offset(t, counters, s.counter[2:]), "step %d: counter %s", at, s.counter)
		}
		top = max(top, got)
		if s.label != "" {
			counters[s.label] = got
		}
	}
	for at, s := range steps {
		req := request{key: cmp.Or(s.key, "k"), token: s.token, owner: s.owner, from: s.from, ttl: s.ttl, keep: time.Minute,
			rollback: s.rollback, tombstone: s.tombstone, permits: s.permits}
		if req.ttl == 0 {
			req.ttl = 10 * time.Second
		}
		if s.read {
			req.read, req.permits = true, scripts.Readers
		}
		if s.keys != "" {
			req.set = &keySet{keys: strings.Split(s.keys, ",")}
			req.key = req.set.keys[0]
		}
		if s.propose != "" {
			req.propose = offset(t, counters, s.propose)
		}
		switch s.op {
		case "acquire":
			g, err := awaitAcquire(ctx, n, req)
			require.NoError(t, err, "step %d", at)
			require.Equal(t, s.ok, g.OK, "step %d: granted", at)
			if g.OK {
				assert.Equal(t, s.tookOver, g.TookOver, "step %d: took over", at)
				counted(at, s, g.Counter)
				continue
			}
			pttlIs(t, at, s.pttl, g.PTTL)
			if s.pttl != "rolled back" || s.holder != "" {
				assert.Equal(t, s.holder, g.Holder, "step %d: holder", at)
			}
			if s.recorded != 0 {
				assert.Equal(t, s.recorded, g.Permits, "step %d: the K recorded", at)
			}
		case "extend":
			e, err := awaitExtend(ctx, n, req)
			require.NoError(t, err, "step %d", at)
			assert.Equal(t, s.extended, e, "step %d", at)
		case "release":
			if s.fence != "" {
				req.fence = offset(t, counters, s.fence)
			}
			r, err := awaitRelease(ctx, n, req)
			require.NoError(t, err, "step %d", at)
			assert.Equal(t, s.released, r, "step %d", at)
		case "fence":
			ok, err := awaitRaise(ctx, n, req, offset(t, counters, s.fence))
			require.NoError(t, err, "step %d", at)
			assert.Equal(t, s.ok, ok, "step %d: raised", at)
		case "wait":
			time.Sleep(3 * time.Millisecond)
		case "inspect":
			st, err := awaitInspect(ctx, n, cmp.Or(s.key, "k"), s.token, s.owner)
			require.NoError(t, err, "step %d", at)
			assert.Equal(t, s.holder, st.Holder, "step %d: holder", at)
			assert.Equal(t, s.ok, st.Held, "step %d: held by the token", at)
			pttlIs(t, at, s.pttl, st.PTTL)
			if s.holder != "" {
				assert.Equal(t, s.holds, st.Holds, "step %d: holds", at)
				counted(at, step{counter: s.counter}, st.Counter)
			}
		default:
			t.Fatalf("step %d: unknown op %q", at, s.op)
		}
	}
}

// offset reads "<label>+<n>": the counter labelled so, plus n.
func offset(t *testing.T, counters map[string]int64, spec string) int64 {
	label, n, ok := strings.Cut(spec, "+")
	c, seen := counters[label]
	require.True(t, ok && seen, "bad counter reference %q", spec)
	var add int64
	_, err := fmt.Sscan(n, &add)
	require.NoError(t, err)
	return c + add
}

// pttlClass names what a PTTL says, as the contract compares it.
// pttlIs checks a step's PTTL: "long" is more than 5 s, any other want a
// class of pttlClass.
func pttlIs(t *testing.T, at int, want string, got time.Duration) {
	t.Helper()
	if want == "long" {
		assert.Greater(t, got, 5*time.Second, "step %d: PTTL", at)
		return
	}
	assert.Equal(t, want, pttlClass(got), "step %d: PTTL %v", at, got)
}

func pttlClass(d time.Duration) string {
	switch {
	case d == scripts.RolledBack:
		return "rolled back"
	case d == scripts.NoKey:
		return "no key"
	case d == scripts.NoExpiry:
		return "no expiry"
	case d == scripts.PermitsDiffer:
		return "permits differ"
	case d > 0:
		return "live"
	}
	return fmt.Sprint(d)
}
