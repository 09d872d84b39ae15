package slot_test

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// keyslotKeys returns the brace cases, then n random keys of random bytes,
// braces made common, from a fixed seed so that a failure repeats.
func keyslotKeys(n int) []string {
	keys := []string{
		"", "{}", "{{a}}", "a{b}c{d}", "}{", "{", "}", "{}{a}", "a{}", "{a}", "{{}}", "{}}",
		"x{\x00}", "\x00", "\xff\xfe{\x80}", "{ }", "foo{bar}{zap}", "foo{{bar}}zap",
		"quorumlock:fence:{orders}", "orders", "123456789", "{user1000}.following",
	}
	r := rand.New(rand.NewPCG(12, 16384))
	alphabet := []byte("{}ab\x00\xff\r\n")
	for range n {
		b := make([]byte, r.IntN(24))
		for i := range b {
			if r.IntN(2) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[i] = byte(r.IntN(256))
			}
		}
		keys = append(keys, string(b))
	}
	return keys
}

// Redis answers CLUSTER KEYSLOT only in cluster mode, whatever its state.
func TestSlots_AgreeWithRedisClusterKeyslot(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{Shards: 3})
	node := c.Addrs()[0]
	t.Run("Of", func(t *testing.T) { testOfKeyslot(t, node) })
	t.Run("TagFor", func(t *testing.T) { testTagForKeyslot(t, node) })
}

func testOfKeyslot(t *testing.T, node string) {
	for _, key := range keyslotKeys(400) {
		got, err := redistest.DoAt(node, "CLUSTER", "KEYSLOT", key)
		require.NoError(t, err, "%q", key)
		want, err := strconv.Atoi(got)
		require.NoError(t, err)
		assert.Equal(t, want, slot.Of(key), "Of(%q)", key)
	}
}

func testTagForKeyslot(t *testing.T, node string) {
	r := rand.New(rand.NewPCG(7, 3))
	for _, s := range append([]int{0, 1, slot.Count - 1}, r.Perm(slot.Count)[:200]...) {
		tag, err := slot.TagFor(s)
		require.NoError(t, err)
		got, err := redistest.DoAt(node, "CLUSTER", "KEYSLOT", "quorumlock:fence-floor:{"+tag+"}")
		require.NoError(t, err)
		assert.Equal(t, strconv.Itoa(s), got, "slot %d: tag %q", s, tag)
	}
}
