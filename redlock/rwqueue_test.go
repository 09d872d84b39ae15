package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// Writer preference in the scripts, which the fake does not keep (it has
// no queue): a writer waiting in the key's queue stops new readers until
// it has had the key, or its place ended; and every key the scripts touch
// expires. On Redis 7 and 6.0.
func TestRWLock_ScriptsQueue(t *testing.T) {
	for _, v := range queueVersions {
		t.Run(v.name, func(t *testing.T) {
			srv := v.start(t, 1)
			n := client(t, srv).nodes[0]
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			read := func(token string) request {
				return request{key: "k", token: token, ttl: 10 * time.Second, read: true, permits: scripts.Readers}
			}
			write := func(token, waiter string, lease time.Duration) request {
				return request{key: "k", token: token, ttl: 10 * time.Second, waiter: waiter, ticket: 1, lease: lease}
			}
			grant := func(r request) scripts.Grant {
				t.Helper()
				g, err := n.acquire(ctx, r)
				require.NoError(t, err)
				return g
			}
			release := func(r request) {
				t.Helper()
				rel, err := n.release(ctx, r)
				require.NoError(t, err)
				require.Equal(t, scripts.Freed, rel, "release of %s", r.token)
			}

			require.True(t, grant(read("r1")).OK)
			g := grant(write("w", "w", 10*time.Second))
			require.False(t, g.OK, "a writer is refused while a reader holds")
			assert.Equal(t, "w", g.Head, "and queues")
			g = grant(read("r2"))
			require.False(t, g.OK, "a reader is refused while a writer waits")
			assert.Equal(t, scripts.Unknown, g.Holder)
			assert.Equal(t, "w", g.Head, "it is told the writer at the head")
			assert.False(t, grant(write("w2", "", 0)).OK, "a writer that does not queue is refused too")
			everyKeyExpires(t, srv[0])

			release(read("r1"))
			require.True(t, grant(write("w", "w", 10*time.Second)).OK, "the writer takes the key once the readers are gone")
			g = grant(read("r2"))
			require.False(t, g.OK)
			assert.Equal(t, "w", g.Holder, "a reader is told the writer holding the key")
			release(write("w", "", 0))
			require.True(t, grant(read("r2")).OK, "nobody waits: a reader is granted")

			// A writer whose place ended holds up nobody.
			g = grant(write("w3", "w3", 50*time.Millisecond))
			require.False(t, g.OK)
			require.Equal(t, "w3", g.Head)
			require.False(t, grant(read("r3")).OK)
			time.Sleep(60 * time.Millisecond)
			require.True(t, grant(read("r3")).OK, "the writer's place ended")
			everyKeyExpires(t, srv[0])
		})
	}
}

// everyKeyExpires checks that every key on s has a TTL, but the node's
// fence floor and its stamp, which outlive every key by design.
func everyKeyExpires(t *testing.T, s *redistest.Server) {
	t.Helper()
	keys, err := redis.Strings(do(t, s, "KEYS", "*"), nil)
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	k := suiteNames().Of("k")
	for _, key := range keys {
		if key == k.Floor() || key == k.Stamp() {
			continue
		}
		pttl, err := redis.Int64(do(t, s, "PTTL", key), nil)
		require.NoError(t, err)
		assert.Positive(t, pttl, "key %q has no TTL", key)
	}
}
