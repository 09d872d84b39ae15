package rueidisdriver

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// slotOf agrees with a cluster node's CLUSTER KEYSLOT, hash tags included.
func TestSlotOf_AgreesWithRedis(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral, "--cluster-enabled", "yes")[0]
	keys := []string{
		"", "a", "foo", "bar", "quorumlock:fence:k", "123456789",
		"{user1000}.following", "{user1000}.followers", "foo{}{bar}", "foo{{bar}}zap",
		"foo{bar}{zap}", "{", "}", "{}", "a{b", "a}b{c}", "{ü}x", "\x00\xff{\x80}",
	}
	for _, k := range keys {
		want, err := srv.Do("CLUSTER", "KEYSLOT", k)
		require.NoError(t, err, "%q", k)
		assert.Equal(t, want, strconv.Itoa(int(slotOf(k))), "%q", k)
	}
}
