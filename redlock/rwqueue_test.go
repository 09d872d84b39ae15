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
				g, err := awaitAcquire(ctx, n, r)
				require.NoError(t, err)
				return g
			}
			release := func(r request) {
				t.Helper()
				rel, err := awaitRelease(ctx, n, r)
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

// A read hold's release or roll-back announces the writer at the head only
// once no reader holds the key on that master: woken while readers hold,
// the writer would be refused again, and readers that come and go would
// keep it retrying as fast as they do.
func TestRWLock_ReadReleaseAnnouncesTheWriterOnceNoReaderHolds(t *testing.T) {
	srv := masters(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := client(t, srv).nodes[0]
	psc := subscribeTo(t, srv[0], "k")
	read := func(token string) request {
		return request{key: "k", token: token, ttl: 10 * time.Second, read: true, permits: scripts.Readers}
	}
	for _, token := range []string{"r1", "r2", "r3"} {
		g, err := awaitAcquire(ctx, n, read(token))
		require.NoError(t, err)
		require.True(t, g.OK)
	}
	g, err := awaitAcquire(ctx, n, request{key: "k", token: "w", ttl: 10 * time.Second, waiter: "w", ticket: 1, lease: 10 * time.Second})
	require.NoError(t, err)
	require.False(t, g.OK, "the writer queues behind the readers")

	// After each step the test publishes a marker of its own: the first
	// message that arrives is the step's announcement, or the marker.
	quiet := func(what string) {
		t.Helper()
		_, err := srv[0].Do("PUBLISH", suiteNames().Of("k").Channel(), "marker")
		require.NoError(t, err)
		msg, ok := psc.Receive().(redis.Message)
		require.True(t, ok)
		require.Equal(t, "marker", string(msg.Data), "%s announced %q while readers hold", what, msg.Data)
	}
	_, err = awaitRelease(ctx, n, read("r1"))
	require.NoError(t, err)
	quiet("a reader's release")
	undo := read("r2")
	undo.rollback = true
	_, err = awaitRelease(ctx, n, undo)
	require.NoError(t, err)
	quiet("a reader's roll-back")
	_, err = awaitRelease(ctx, n, read("r3"))
	require.NoError(t, err)
	msg, ok := psc.Receive().(redis.Message)
	require.True(t, ok, "the last reader's release announced nothing")
	assert.Equal(t, "w", string(msg.Data), "it names the writer at the head")
}

// A waiting reader holds no place in the masters' queues, and is woken by
// an announcement only when nobody queues there: one that names a head
// names a writer, which refuses readers while it waits, so waking the
// readers of every client on each release would only get them refused.
func TestRWLock_WaitingReaderWokenOnlyWhenNobodyQueues(t *testing.T) {
	c := client(t, masters(t, 1))
	w := c.hub.join("k", time.Second, lockOptions{read: true}, nil)
	defer w.leave(false)
	woken := func() bool {
		select {
		case <-w.wake:
			return true
		default:
			return false
		}
	}
	woken() // whatever joining left
	c.hub.announced("k", "writer")
	assert.False(t, woken(), "a release naming the writer at the head woke a reader")
	c.hub.announced("k", "")
	assert.True(t, woken(), "nobody queues: the reader tries")
}
