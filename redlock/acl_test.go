package redlock

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// aclMasters starts n masters with one ACL user, "app" (password
// "secret"), whose rules are given, and returns them with the addresses
// that log in as that user.
func aclMasters(t *testing.T, n int, rules ...string) ([]*redistest.Server, []string) {
	t.Helper()
	args := append([]string{"--user", "app", "on", ">secret"}, rules...)
	srv := redistest.Start(t, n, redistest.Ephemeral, args...)
	urls := make([]string, n)
	for i, s := range srv {
		urls[i] = "redis://app:secret@" + s.Addr()
	}
	return srv, urls
}

// connections returns how many connections a master has accepted.
func connections(t *testing.T, s *redistest.Server) int {
	t.Helper()
	info, err := redis.String(do(t, s, "INFO", "stats"), nil)
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_connections_received:"); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	t.Fatal("no total_connections_received in INFO stats")
	return 0
}

// A typical application ACL that does not grant the lock's keys ends Lock
// at once with ErrMisconfigured, naming the keys and what to grant, instead
// of retrying a permanent error for ever; its roll-backs do not retry it.
func TestIntegration_ACL_PermanentErrorsEndLockAtOnce(t *testing.T) {
	for _, guard := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprintf("guard %v", guard), func(t *testing.T) {
			_, urls := aclMasters(t, 3, "~app:*", "&app:*", "+@all", "-@dangerous")
			log := &records{}
			c, err := NewFromAddrs(urls, WithRestartGuard(guard), WithNodeTimeout(suiteNodeTimeout), WithLogger(slog.New(log)))
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			_, err = c.Lock(ctx, "job", 10*time.Second)
			require.ErrorIs(t, err, ErrNotObtained)
			require.ErrorIs(t, err, ErrMisconfigured)
			assert.Less(t, time.Since(start), 2*time.Second, "Lock retried a permanent error")
			var ne *NodeError
			assert.ErrorAs(t, err, &ne)
			assert.Contains(t, err.Error(), "NOPERM")
			for _, want := range []string{"NOPERM", "job", scripts.Names{}.Fence("job"), scripts.Names{}.Channel("job"), "~quorumlock:*", "&quorumlock:*"} {
				assert.Contains(t, detail(t, err), want)
			}
			err = c.Do(ctx, "job", 10*time.Second, func(context.Context) error { return nil })
			require.ErrorIs(t, err, ErrMisconfigured, "Do ends at once too")
			require.NoError(t, c.Close())
			// A roll-back that met NOPERM gives up after that one try. (How
			// many roll-backs there were depends on how many attempts a
			// loaded machine needed: a master that answered late is not a
			// permanent error, and the attempt is made again.)
			log.mu.Lock()
			permanentEnds := 0
			for _, r := range log.recs {
				if !strings.Contains(r.Message, "delete failed") {
					continue
				}
				var tries int64
				var cause string
				r.Attrs(func(a slog.Attr) bool {
					switch a.Key {
					case "tries":
						tries = a.Value.Int64()
					case "err":
						cause = a.Value.String()
					}
					return true
				})
				if strings.Contains(cause, "NOPERM") {
					permanentEnds++
					assert.Equal(t, int64(1), tries, "a roll-back retried a permanent error: %s", cause)
				}
			}
			log.mu.Unlock()
			assert.Positive(t, permanentEnds, "the roll-backs met the ACL")
		})
	}
}

// A master that requires a password the address does not give answers
// NOAUTH, not a protocol error, and Lock ends at once.
func TestIntegration_NoPassword_IsNOAUTH(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.Ephemeral, "--requirepass", "secret")
	c, err := NewFromAddrs(redistest.Addrs(srv), WithNodeTimeout(suiteNodeTimeout), WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.Lock(ctx, "k", 10*time.Second)
	require.ErrorIs(t, err, ErrMisconfigured)
	assert.Contains(t, err.Error(), "NOAUTH")
	assert.NotContains(t, err.Error(), "Protocol error")
	assert.Contains(t, err.Error(), "password")
}

// With keys granted but publishing denied, Release still releases: the
// deletion happened, and a failed announcement cannot turn it into an error.
func TestIntegration_ACL_PublishDenied_ReleaseStillReleases(t *testing.T) {
	srv, urls := aclMasters(t, 3, "~*", "resetchannels", "+@all")
	c, err := NewFromAddrs(urls, WithRestartGuard(0), WithNodeTimeout(suiteNodeTimeout), WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	l, err := c.TryLock(context.Background(), "k", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(context.Background()))
	assert.NoError(t, l.Err(), "a release whose announcement failed is still a clean release")
	err = l.Release(context.Background())
	assert.ErrorIs(t, err, ErrLockNotHeld)
	assert.Contains(t, err.Error(), "already released")
	assert.NoError(t, l.Err(), "released, not lost")
	require.NoError(t, c.Close())
	for _, s := range srv {
		assert.Nil(t, do(t, s, "GET", "k"), "%s keeps the key", s.Addr())
	}
}

// With subscribing denied, the pub/sub connection backs off instead of
// redialling every few milliseconds, and says so once per master; the
// waiter falls back to its backoff and still gets the lock.
func TestIntegration_ACL_SubscribeDenied_BacksOff(t *testing.T) {
	srv, urls := aclMasters(t, 3, "~*", "resetchannels", "+@all")
	log := &records{}
	c, err := NewFromAddrs(urls, WithRestartGuard(0), WithNodeTimeout(suiteNodeTimeout), WithLogger(slog.New(log)))
	require.NoError(t, err)
	defer c.Close()
	holder, err := NewFromAddrs(redistest.Addrs(srv), WithRestartGuard(0), WithNodeTimeout(suiteNodeTimeout), WithLogger(quiet()))
	require.NoError(t, err)
	defer holder.Close()
	l, err := holder.TryLock(context.Background(), "k", 1500*time.Millisecond)
	require.NoError(t, err)
	before := connections(t, srv[0])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := c.Lock(ctx, "k", 10*time.Second)
	require.NoError(t, err, "the waiter gets the lock once the holder's TTL runs out")
	dials := connections(t, srv[0]) - before
	require.NoError(t, got.Release(context.Background()))
	require.NoError(t, c.Close())
	assert.Less(t, dials, 20, "%d connections to one master during a 1.5 s wait", dials)
	warns := log.warnings("release announcements")
	assert.Len(t, warns, 3, "one warning per master: %q", warns)
	for _, w := range warns {
		assert.Contains(t, w, "NOPERM")
	}
	_ = l
}

// In a namespace, every key and channel the client touches lies below it,
// so one pair of ACL patterns grants them all.
func TestIntegration_Namespace_OneACLRuleCoversEverything(t *testing.T) {
	srv, urls := aclMasters(t, 3, "~app:lock:*", "&app:lock:*", "+@all")
	c, err := NewFromAddrs(urls, WithRestartGuard(0), WithNodeTimeout(suiteNodeTimeout), WithLogger(quiet()), WithNamespace("app:lock:"))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	l, err := c.TryLock(ctx, "job", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Extend(ctx, 10*time.Second))
	st, err := c.Inspect(ctx, "job")
	require.NoError(t, err)
	assert.Equal(t, l.Token(), st.Holder)
	for _, s := range srv {
		keys, err := redis.Strings(do(t, s, "KEYS", "*"), nil)
		require.NoError(t, err)
		for _, k := range keys {
			assert.True(t, strings.HasPrefix(k, "app:lock:"), "%s outside the namespace", k)
		}
	}
	waited := make(chan error, 1)
	go func() {
		w, err := c.Lock(ctx, "job", 10*time.Second, WithOwner("other"))
		if err == nil {
			err = w.Release(ctx)
		}
		waited <- err
	}()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, l.Release(ctx))
	select {
	case err := <-waited:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken")
	}
}
