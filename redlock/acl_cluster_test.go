package redlock

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// readmeClusterACL returns the permissions the docs add to the ACL rule
// for a Redis Cluster node given to pool.
func readmeClusterACL(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(aclDoc)
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)On a Redis Cluster node.*?add\\s+`([^`]+)`\\s+to the rule").FindSubmatch(b)
	require.NotNil(t, m, "%s gives no ACL permissions for cluster nodes", aclDoc)
	return strings.Fields(string(m[1]))
}

// clusterKeys returns a key of a slot of each master of a cluster that
// redis-cli made of three masters (slots 0-5460, 5461-10922, 10923-16383).
func clusterKeys(t *testing.T, name string) []string {
	t.Helper()
	var keys []string
	for _, s := range []int{100, 6000, 12000} {
		keys = append(keys, keyOfSlot(t, name, s))
	}
	return keys
}

// keyOfSlot returns a key named after name in slot s.
func keyOfSlot(t *testing.T, name string, s int) string {
	t.Helper()
	tag, err := slot.TagFor(s)
	require.NoError(t, err)
	return name + ":{" + tag + "}"
}

// Through the redigo cluster driver, over three clusters, the docs' ACL
// user with the permissions they add for cluster nodes locks, extends,
// inspects, releases and is woken on every shard, follows ASK into a slot
// being migrated, and nothing it does is denied. A user lacking one of
// those permissions gets what docs/production.md says of it: without
// CLUSTER SLOTS or ASKING no quorum is possible and Lock ends at once, naming the cause;
// without sharded publishing a release still releases; without sharded
// subscribing or unsubscribing waiters fall back to their backoff, and a
// warning names the command. The rule and the permissions are read from the
// docs, so a permission it forgets fails the first part.
func TestCluster_ACL_TheDocsPermissions(t *testing.T) {
	perms := readmeClusterACL(t)
	rule := strings.Fields(readmeACL(t, suiteNS)) // app on >secret ...
	require.Equal(t, "app", rule[0])
	users := map[string][]string{"app": slices.Concat(rule[1:], perms)}
	without := func(p string) string {
		return "app-without-" + strings.ReplaceAll(strings.TrimPrefix(p, "+"), "|", "-")
	}
	for _, p := range perms {
		users[without(p)] = slices.Concat(rule[1:], slices.DeleteFunc(slices.Clone(perms), func(q string) bool { return q == p }))
	}
	var extra []string
	for name, rules := range users {
		extra = append(append(extra, "--user", name), rules...)
	}
	cs := redistest.StartClusters(t, 3, redistest.ClusterOptions{Extra: extra})
	// A slot that no lock uses (a used one keeps its fence floor) is moving
	// throughout, on every cluster: its master lacks every key of a lock
	// there and answers ASK.
	migrating := keyOfSlot(t, "migrating", 7000)
	migrate(t, cs, slot.Of(migrating))
	client := func(t *testing.T, user string, opts ...Option) (*Client, *records) {
		t.Helper()
		urls := make([]string, len(cs))
		for i, c := range cs {
			urls[i] = "redis+cluster://" + user + ":secret@" + strings.Join(c.Addrs(), ",")
		}
		log := &records{}
		c, err := NewFromAddrs(urls, append([]Option{WithNamespace(suiteNS), WithRestartGuard(time.Millisecond),
			WithLogger(slog.New(log)), WithNodeTimeout(time.Second)}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c, log
	}
	ctx := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	const ttl = 10 * time.Second
	backoff := WithRetry(ConstantBackoff(30 * time.Second))
	// Places renew every third of the lease: a long one leaves the waiter
	// nothing but the release announcement to wake it in time.
	lease := WithQueueLease(time.Hour)

	t.Run("the docs' user", func(t *testing.T) {
		c, log := client(t, "app", backoff, lease)
		other, otherLog := client(t, "app", backoff, lease)
		ctx := ctx(t)
		for _, key := range clusterKeys(t, "job") {
			// The clusters' masters are fresh, and in quarantine for up to
			// two seconds of whole-second uptime.
			var l *Lock
			var err error
			for try := 0; try < 40; try++ {
				if l, err = c.TryLock(ctx, key, ttl); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			require.NoError(t, err, key)
			require.NoError(t, l.Extend(ctx, ttl), key)
			st, err := c.Inspect(ctx, key)
			require.NoError(t, err, key)
			assert.Equal(t, l.Token(), st.Holder, key)
			// Another client resumes the lock, with the taker's fence, and extends it.
			r, err := other.Resume(ctx, key, l.Token(), ttl)
			require.NoError(t, err, key)
			assert.Equal(t, l.Fence(), r.Fence(), key)
			require.NoError(t, r.Extend(ctx, ttl), key)
			woken := make(chan error, 1)
			go func() {
				w, err := other.Lock(ctx, key, ttl)
				if err == nil {
					err = w.Release(ctx)
				}
				woken <- err
			}()
			time.Sleep(300 * time.Millisecond) // the waiter subscribes on the key's shard
			require.NoError(t, l.Release(ctx), key)
			select {
			case err := <-woken:
				require.NoError(t, err, key)
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: the waiter was not woken; its backoff is 30s", key)
			}
		}
		// The user follows ASK, with ASKING, to the slot's new owner, which
		// cannot run a script whose keys it lacks during the migration and
		// says TRYAGAIN (without ASKING it would say MOVED): a missing
		// vote, which Lock retries, and nothing is left.
		_, err := c.TryLock(ctx, migrating, ttl)
		require.ErrorIs(t, err, ErrNotObtained)
		assert.NotErrorIs(t, err, ErrMisconfigured)
		assert.Contains(t, detail(t, err), "TRYAGAIN")
		for _, cl := range cs {
			masters, err := cl.Masters()
			require.NoError(t, err)
			for _, m := range masters {
				n, err := redistest.DoAt(m, "CLUSTER", "COUNTKEYSINSLOT", fmt.Sprint(slot.Of(migrating)))
				require.NoError(t, err)
				assert.Equal(t, "0", n, "%s keeps keys of the migrating slot", m)
			}
		}
		time.Sleep(300 * time.Millisecond) // a denied unsubscription would be said by now
		assert.Empty(t, log.warnings(""), "nothing is denied")
		assert.Empty(t, otherLog.warnings(""), "nothing is denied")
	})
	for _, p := range perms {
		t.Run("without "+p, func(t *testing.T) {
			switch p {
			case "+cluster|slots", "+asking":
				key := clusterKeys(t, "denied")[1]
				if p == "+asking" {
					key = migrating
				}
				// No quorum is possible without the command: Lock ends.
				c, _ := client(t, without(p))
				start := time.Now()
				_, err := c.Lock(ctx(t), key, ttl)
				require.ErrorIs(t, err, ErrNotObtained)
				require.ErrorIs(t, err, ErrMisconfigured)
				assert.Less(t, time.Since(start), 2*time.Second, "Lock retried a permanent error")
				assert.Contains(t, err.Error(), "NOPERM")
				assert.Contains(t, detail(t, err), strings.TrimPrefix(p, "+"), "the error's detail names the command")
			case "+spublish":
				c, _ := client(t, without(p))
				key := clusterKeys(t, "unannounced")[0]
				l, err := c.TryLock(ctx(t), key, ttl)
				require.NoError(t, err)
				require.NoError(t, l.Release(ctx(t)), "a release whose announcement is denied still releases")
				assert.NoError(t, l.Err())
				// Release returns at a quorum; Close waits for the deletes
				// still on their way.
				require.NoError(t, c.Close())
				for _, cl := range cs {
					m, err := cl.MasterFor(slot.Of(suiteNS + key))
					require.NoError(t, err)
					n, err := redistest.DoAt(m, "EXISTS", suiteNS+key)
					require.NoError(t, err)
					assert.Equal(t, "0", n, "%s keeps the key", m)
				}
			case "+ssubscribe":
				// The waiter cannot listen, and gets the lock when the
				// holder's TTL runs out.
				holder, _ := client(t, "app")
				c, log := client(t, without(p))
				key := clusterKeys(t, "unheard")[2]
				_, err := holder.TryLock(ctx(t), key, 1500*time.Millisecond)
				require.NoError(t, err)
				got, err := c.Lock(ctx(t), key, ttl)
				require.NoError(t, err, "the waiter gets the lock once the holder's TTL runs out")
				require.NoError(t, got.Release(ctx(t)))
				warns := log.warnings("release announcements")
				assert.Len(t, warns, len(cs), "one warning per cluster: %q", warns)
				for _, w := range warns {
					assert.Contains(t, w, "NOPERM")
					assert.Contains(t, w, "ssubscribe")
				}
			case "+sunsubscribe":
				// The waiter hears the release; leaving the channel then
				// breaks its subscription, which is said.
				holder, _ := client(t, "app")
				c, log := client(t, without(p), backoff, lease)
				key := clusterKeys(t, "unleft")[2]
				l, err := holder.TryLock(ctx(t), key, ttl)
				require.NoError(t, err)
				woken := make(chan error, 1)
				cx := ctx(t)
				go func() {
					w, err := c.Lock(cx, key, ttl)
					if err == nil {
						err = w.Release(cx)
					}
					woken <- err
				}()
				time.Sleep(300 * time.Millisecond) // the waiter subscribes
				require.NoError(t, l.Release(ctx(t)))
				select {
				case err := <-woken:
					require.NoError(t, err)
				case <-time.After(5 * time.Second):
					t.Fatal("the waiter was not woken; its backoff is 30s")
				}
				var warns []string
				for try := 0; try < 100 && len(warns) == 0; try++ {
					time.Sleep(20 * time.Millisecond)
					warns = log.warnings("release announcements")
				}
				require.NotEmpty(t, warns, "the denied unsubscription is said")
				for _, w := range warns {
					assert.Contains(t, w, "NOPERM")
					assert.Contains(t, w, "sunsubscribe")
				}
			default:
				t.Fatalf("the docs add %s, which this test does not know", p)
			}
		})
	}
}

// migrate starts moving slot s, which holds no keys, from its master to
// another on each cluster: the old master answers ASK for the keys it
// lacks, and the new one serves them after ASKING.
func migrate(t *testing.T, cs []*redistest.Cluster, s int) {
	t.Helper()
	for _, c := range cs {
		_, _, err := c.Migrate(s)
		require.NoError(t, err)
	}
}
