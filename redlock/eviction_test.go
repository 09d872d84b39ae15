package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// A master that may evict lock keys does not vote, and says so once, naming
// its policy and what to set; WithTrustEviction lets it vote. Every policy
// but noeviction can evict a lock key (they all carry a TTL) once maxmemory
// is set; without maxmemory nothing is evicted.
func TestIntegration_Eviction_Policies(t *testing.T) {
	for _, tc := range []struct {
		policy    string
		maxmemory string
		opts      []Option
		votes     bool
	}{
		{"allkeys-lru", "64mb", nil, false},
		{"allkeys-lru", "64mb", []Option{WithTrustEviction()}, true},
		{"allkeys-lfu", "64mb", nil, false},
		{"allkeys-random", "64mb", nil, false},
		{"volatile-lru", "64mb", nil, false},
		{"volatile-lfu", "64mb", nil, false},
		{"volatile-random", "64mb", nil, false},
		{"volatile-ttl", "64mb", nil, false},
		{"volatile-ttl", "64mb", []Option{WithTrustEviction()}, true},
		{"noeviction", "64mb", nil, true},
		{"allkeys-lru", "0", nil, true},
	} {
		name := fmt.Sprintf("%s maxmemory %s trusted=%v", tc.policy, tc.maxmemory, len(tc.opts) > 0)
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t, 1, redistest.Ephemeral, "--maxmemory", tc.maxmemory, "--maxmemory-policy", tc.policy)
			l := &logs{}
			c := clientAt(t, redistest.Addrs(srv), append([]Option{WithRestartGuard(0), WithLogger(slog.New(l))}, tc.opts...)...)
			ctx := context.Background()
			for range 3 {
				lk, err := c.TryLock(ctx, "k", time.Second)
				if !tc.votes {
					require.ErrorIs(t, err, ErrNotObtained)
					continue
				}
				require.NoError(t, err)
				require.NoError(t, lk.Release(ctx))
			}
			st, err := c.Inspect(ctx, "k")
			require.NoError(t, err)
			assert.Equal(t, !tc.votes, st.Nodes[0].Quarantined, st.Nodes[0].Distrust)
			w := l.warnings(srv[0].Addr())
			switch {
			case !tc.votes:
				require.Len(t, w, 1, "one warning: %v", w)
				assert.Contains(t, w[0], tc.policy)
				assert.Contains(t, w[0], "noeviction")
				assert.Contains(t, st.Nodes[0].Distrust, tc.policy)
			case len(tc.opts) > 0:
				require.Len(t, w, 1, "trusted, with a warning: %v", w)
				assert.Contains(t, w[0], "WithTrustEviction")
			default:
				assert.Empty(t, w)
			}
		})
	}
}

// Setting noeviction lets the master vote again, without waiting for a new
// connection.
func TestIntegration_Eviction_FixedPolicyVotesAgain(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral, "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru")
	c := clientAt(t, redistest.Addrs(srv), WithRestartGuard(0))
	ctx := context.Background()
	_, err := c.TryLock(ctx, "k", time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	_, err = srv[0].Do("CONFIG", "SET", "maxmemory-policy", "noeviction")
	require.NoError(t, err)
	var lk *Lock
	for i := 0; ; i++ {
		require.Less(t, i, 100, "still refused after the policy was fixed: %v", err)
		if lk, err = c.TryLock(ctx, "k", time.Second); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, lk.Release(ctx))
}

// fillUntilEvicted writes junk to the master until key is gone, as a cache
// sharing the master would under memory pressure.
func fillUntilEvicted(t *testing.T, s *redistest.Server, key string) {
	t.Helper()
	conn, err := redis.Dial("tcp", s.Addr(), redis.DialReadTimeout(5*time.Second))
	require.NoError(t, err)
	defer conn.Close()
	junk := strings.Repeat("x", 1024)
	for batch := 0; ; batch++ {
		require.Less(t, batch, 200, "%s still holds %s after %d MB of junk", s.Addr(), key, batch)
		for i := range 1000 {
			conn.Send("SET", fmt.Sprintf("cache:%d:%d", batch, i), junk, "EX", 3600)
		}
		require.NoError(t, conn.Flush())
		for range 1000 {
			if _, err := conn.Receive(); err != nil {
				var re redis.Error
				require.True(t, errors.As(err, &re), "%v", err)
			}
		}
		n, err := redis.Int(conn.Do("EXISTS", key))
		require.NoError(t, err)
		if n == 0 {
			return
		}
	}
}

// Memory pressure evicts a held lock's key on every master; with
// maxmemory-policy allkeys-lru trusted, another client then gets the lock
// while the first still holds it: the two holders that the default
// prevents by not counting such masters at all.
func TestIntegration_Eviction_UnderPressure(t *testing.T) {
	for _, trust := range []bool{true, false} {
		name := "default: refused"
		if trust {
			name = "trusted: two holders, the control"
		}
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t, 3, redistest.Ephemeral, "--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru")
			opts := []Option{WithRestartGuard(0)}
			if trust {
				opts = append(opts, WithTrustEviction())
			}
			a := clientAt(t, redistest.Addrs(srv), opts...)
			b := clientAt(t, redistest.Addrs(srv), opts...)
			ctx := context.Background()
			la, errA := a.TryLock(ctx, "k", 30*time.Second)
			if errA == nil {
				for _, s := range srv {
					fillUntilEvicted(t, s, "k")
				}
			}
			lb, errB := b.TryLock(ctx, "k", 30*time.Second)
			if trust {
				require.NoError(t, errA)
				require.NoError(t, errB, "the control: with the lock key evicted, B gets the lock")
				assert.Positive(t, la.Validity(), "while A still holds it")
				return
			}
			assert.False(t, errA == nil && errB == nil, "two holders")
			require.ErrorIs(t, errA, ErrNotObtained, "masters that may evict lock keys granted it")
			require.ErrorIs(t, errB, ErrNotObtained)
			assert.Nil(t, lb)
		})
	}
}
