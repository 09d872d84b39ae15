package scripts

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// keysAndSpaces are lock keys and namespaces with and without hash tags,
// braces that make no tag, and bytes that are not text.
var (
	keysForNames = []string{"job", "{user:1}:job", "a{b}c{d}", "{}x", "}{", "x{", "{{a}}", "\x00\xff{\x01}", "quorum", ""}
	spaces       = []string{"", "app:lock:", "t"}
)

// Every key and channel a script touches for a key is in the lock key's
// hash slot, so that a Redis Cluster serves the script, and the lock key is
// the user's key as given.
func TestNames_ShareTheKeysSlot(t *testing.T) {
	for _, ns := range spaces {
		n := Names{NS: ns, PerSlot: true}
		for _, key := range keysForNames {
			lock := n.Lock(key)
			require.Equal(t, ns+key, lock)
			want := slot.Of(lock)
			k := n.Of(key)
			for _, name := range []string{n.Fence(key), n.Floor(key), n.Void(key, "tok{en}"), n.Stamp(key), n.Channel(key), k.Queue(), k.Leases(), k.Permits()} {
				assert.Equal(t, want, slot.Of(name), "ns %q key %q: %q", ns, key, name)
				assert.True(t, strings.HasPrefix(name, ns+ReservedPrefix), "%q is below the namespace and the reserved prefix", name)
			}
		}
	}
}

// Names of different keys never collide, floors aside, which are per slot.
func TestNames_Distinct(t *testing.T) {
	n := Names{NS: "app:"}
	seen := map[string]string{}
	for _, key := range keysForNames {
		k := n.Of(key)
		for _, name := range []string{n.Lock(key), n.Fence(key), n.Void(key, key), n.Channel(key), k.Queue(), k.Leases(), k.Permits()} {
			prev, dup := seen[name]
			assert.False(t, dup, "%q names both %q and %q", name, prev, key)
			seen[name] = key
		}
	}
}

// Each name is spelled as the scripts and the ACL advice expect: the
// names Of makes together read the same as each made on its own.
func TestNames_Spelling(t *testing.T) {
	for _, ns := range spaces {
		for _, perSlot := range []bool{false, true} {
			n := Names{NS: ns, PerSlot: perSlot}
			for _, key := range keysForNames {
				tag, err := slot.TagFor(slot.Of(ns + key))
				require.NoError(t, err)
				floor := ns + "quorumlock:fence-floor"
				if perSlot {
					floor += ":{" + tag + "}"
				}
				k := n.Of(key)
				if perSlot {
					k = n.OfToken(key, "tok")
				}
				assert.Equal(t, ns+key, k.Lock())
				assert.Equal(t, ns+"quorumlock:fence:{"+tag+"}"+key, k.Fence())
				assert.Equal(t, floor, k.Floor())
				assert.Equal(t, floor+":stamp", k.Stamp())
				assert.Equal(t, ns+"quorumlock:void:{"+tag+"}tok", k.Void("tok"))
				assert.Equal(t, ns+"quorumlock:void:{"+tag+"}other", k.Void("other"))
				assert.Equal(t, ns+"quorumlock:released:{"+tag+"}"+key, k.Channel())
				assert.Equal(t, ns+"quorumlock:queue:{"+tag+"}"+key, k.Queue())
				assert.Equal(t, ns+"quorumlock:queue-leases:{"+tag+"}"+key, k.Leases())
			}
		}
	}
}

// A plain master keeps one fence floor and one stamp for all its keys; a
// cluster node one per slot.
func TestNames_FloorPerMasterOrPerSlot(t *testing.T) {
	plain, sharded := Names{NS: "app:"}, Names{NS: "app:", PerSlot: true}
	assert.Equal(t, "app:quorumlock:fence-floor", plain.Floor("a"))
	assert.Equal(t, plain.Floor("a"), plain.Floor("{user:1}:job"))
	assert.Equal(t, "app:quorumlock:fence-floor:stamp", plain.Stamp("a"))
	assert.NotEqual(t, sharded.Floor("a"), sharded.Floor("b"), "a and b are in different slots")
	assert.Equal(t, sharded.Floor("{t}a"), sharded.Floor("{t}b"), "one slot")
	assert.Equal(t, plain.Fence("a"), sharded.Fence("a"), "counters are per key either way")
}

// KeyOf reads the key back from its channel, and nothing from other
// channels.
func TestNames_KeyOf(t *testing.T) {
	for _, ns := range spaces {
		n := Names{NS: ns}
		for _, key := range keysForNames {
			got, ok := n.KeyOf(n.Channel(key))
			assert.True(t, ok, "ns %q key %q", ns, key)
			assert.Equal(t, key, got)
		}
		for _, ch := range []string{"", "other", n.NS + ReservedPrefix + "released:job", n.NS + ReservedPrefix + "released:{HHHHH}job", n.Fence("job")} {
			_, ok := n.KeyOf(ch)
			assert.False(t, ok, "ns %q channel %q", ns, ch)
		}
	}
}

// A real cluster agrees with the slots the names are given.
func TestNames_ClusterKeySlot(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	node := c.Nodes()[0]
	n := Names{NS: "app:", PerSlot: true}
	for _, key := range keysForNames {
		for _, name := range []string{n.Lock(key), n.Fence(key), n.Floor(key), n.Void(key, "t"), n.Stamp(key), n.Channel(key)} {
			got, err := node.Do("CLUSTER", "KEYSLOT", name)
			require.NoError(t, err)
			assert.Equal(t, slot.Of(n.Lock(key)), atoi(t, got), "%q", name)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		require.True(t, c >= '0' && c <= '9', "not a number: %q", s)
		n = n*10 + int(c-'0')
	}
	return n
}
