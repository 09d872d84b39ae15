package drivertest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// What the lock keeps on a master for a lock key k, without a namespace,
// written out here as a user reading the masters sees it. {T} is the hash
// tag of k's slot (slot.TagFor), which puts every name in k's slot.
const (
	fencePrefix   = "quorumlock:fence:"       // + {T}k: the fence record of k's lock: a plain lock's lives with it, a reentrant one's for the retention
	floorPrefix   = "quorumlock:fence-floor:" // + {T}: the fence floor of k's slot, and + ":stamp" its stamp
	masterFloor   = "quorumlock:fence-floor"  // a plain master's one fence floor, and + ":stamp" its stamp
	voidPrefix    = "quorumlock:void:"        // + {T}token: a tombstone, for as long as a request may be on its way
	releasePrefix = "quorumlock:released:"    // + {T}k: the channel k's releases are announced on
)

// tagOf returns k's hash tag, braces included.
func tagOf(t *testing.T, k string) string {
	t.Helper()
	tag, err := slot.TagFor(slot.Of(k))
	require.NoError(t, err)
	return "{" + tag + "}"
}

// holders returns the nodes whose server for key holds it.
func holders(t *testing.T, n nodes, key string) []int {
	t.Helper()
	var held []int
	for i := range nodeCount {
		v, err := redistest.DoAt(n.server(t, i, key), "EXISTS", key)
		require.NoError(t, err)
		if v != "0" {
			held = append(held, i)
		}
	}
	return held
}

// leftovers returns what the lock left on any server of any node, once its
// locks on keys are free, beyond what it keeps there by design: the fence
// floor of each key's slot and its stamp, and, while they expire, each key's
// fencing counter and the tombstones of its slot. A lock key, a counter or
// tombstone that never expires, or any other key is a leftover, reported
// as "<server> <key>".
func leftovers(t *testing.T, n nodes, keys ...string) []string {
	t.Helper()
	var left []string
	for _, addr := range n.servers() {
		names, err := redistest.ListAt(addr, "KEYS", "*")
		require.NoError(t, err)
		for _, name := range names {
			if !kept(t, addr, name, keys) {
				left = append(left, addr+" "+name)
			}
		}
	}
	return left
}

// kept reports whether name, found on the server at addr, is one the lock
// keeps by design for one of keys.
func kept(t *testing.T, addr, name string, keys []string) bool {
	t.Helper()
	for _, k := range keys {
		tag := tagOf(t, k)
		switch {
		case name == floorPrefix+tag, name == floorPrefix+tag+":stamp",
			name == masterFloor, name == masterFloor+":stamp":
			return true
		case name == fencePrefix+tag+k, strings.HasPrefix(name, voidPrefix+tag):
			return expires(t, addr, name)
		}
	}
	return false
}

// expires reports whether the key has a TTL.
func expires(t *testing.T, addr, key string) bool {
	t.Helper()
	v, err := redistest.DoAt(addr, "PTTL", key)
	require.NoError(t, err)
	ms, err := strconv.Atoi(v)
	require.NoError(t, err)
	return ms > 0 || ms == -2 // -2: gone since it was listed
}

// subscribers returns the servers where a client still listens for the
// releases of one of keys, reported as "<server> <channel>": by pub/sub on
// any server, or by sharded pub/sub on the server of the channel's slot.
func subscribers(t *testing.T, n nodes, keys ...string) []string {
	t.Helper()
	var left []string
	listening := func(addr, sub, ch string) {
		v, err := redistest.ListAt(addr, "PUBSUB", sub, ch)
		require.NoError(t, err)
		require.Len(t, v, 2, "PUBSUB %s %s", sub, ch)
		if v[1] != "0" {
			left = append(left, addr+" "+ch)
		}
	}
	for _, k := range keys {
		ch := releasePrefix + tagOf(t, k) + k
		for _, addr := range n.servers() {
			listening(addr, "NUMSUB", ch)
		}
		for i := range nodeCount {
			listening(n.server(t, i, ch), "SHARDNUMSUB", ch)
		}
	}
	return left
}

// settles waits, bounded, until found returns nothing: the lock returns at a
// quorum, and its last requests (a straggler's acquire, a delete) may still
// be on their way to the other masters; none may stay.
func settles[T any](t *testing.T, found func() []T, msgAndArgs ...any) {
	t.Helper()
	var left []T
	for try := 0; try < 100; try++ {
		if left = found(); len(left) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.Empty(t, left, msgAndArgs...)
}
