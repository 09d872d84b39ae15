package goredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/goredis"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

func TestNew_BadInput_IsInvalid(t *testing.T) {
	standalone := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer standalone.Close()
	failover := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:1"}})
	defer failover.Close()
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		opts   []goredis.Option
	}{
		{"nil client", nil, nil},
		{"typed nil client", (*redis.Client)(nil), nil},
		{"typed nil cluster client", (*redis.ClusterClient)(nil), nil},
		{"nil option", standalone, []goredis.Option{nil}},
		{"empty name", standalone, []goredis.Option{goredis.WithName("")}},
		{"unnamed failover client", failover, nil},
		{"ring", ring, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := goredis.New(tc.client, tc.opts...)
			assert.ErrorIs(t, err, redlock.ErrInvalid)
			assert.Nil(t, m)
		})
	}
}

func TestNew_Names(t *testing.T) {
	standalone := redis.NewClient(&redis.Options{Addr: "10.0.0.7:6379"})
	defer standalone.Close()
	failover := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "locks", SentinelAddrs: []string{"127.0.0.1:1"}})
	defer failover.Close()
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"10.0.0.7:7000", "10.0.0.8:7000"}})
	defer cluster.Close()
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		opts   []goredis.Option
		want   string
	}{
		{"standalone", standalone, nil, "10.0.0.7:6379"},
		{"standalone named", standalone, []goredis.Option{goredis.WithName("primary")}, "primary"},
		{"failover named", failover, []goredis.Option{goredis.WithName("sentinel:locks")}, "sentinel:locks"},
		{"cluster", cluster, nil, "cluster(10.0.0.7:7000,10.0.0.8:7000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := goredis.New(tc.client, tc.opts...)
			require.NoError(t, err)
			defer m.Close()
			assert.Equal(t, tc.want, m.Addr())
		})
	}
}

func TestClose_ClosesTheClientOnlyWhenTold(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	one := driver.NewScript("one", `return 1`)
	for _, tc := range []struct {
		name       string
		opts       []goredis.Option
		clientOpen bool
	}{
		{"by default the client stays open", nil, true},
		{"WithCloseClient closes it", []goredis.Option{goredis.WithCloseClient()}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: srv[0].Addr()})
			defer c.Close()
			m, err := goredis.New(c, tc.opts...)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err = m.Eval(ctx, driver.Call{Script: one, Keys: []string{"k"}})
			require.NoError(t, err)
			require.NoError(t, m.Close())
			require.NoError(t, m.Close(), "Close is idempotent")

			_, err = m.Eval(ctx, driver.Call{Script: one, Keys: []string{"k"}})
			assert.ErrorIs(t, err, goredis.ErrClosed)
			_, err = m.Subscribe(ctx)
			assert.ErrorIs(t, err, goredis.ErrClosed)
			err = c.Ping(ctx).Err()
			if tc.clientOpen {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, redis.ErrClosed)
			}
		})
	}
}

// A lock client over go-redis clients in one line: it takes and releases
// locks, and its Close gives the masters' connections back to the clients,
// which stay open for the application.
func TestNewClient_LocksAndLeavesTheClientsOpen(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.Ephemeral)
	clients := make([]redis.UniversalClient, len(srv))
	for i, s := range srv {
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		t.Cleanup(func() { c.Close() })
		clients[i] = c
	}
	lc, err := goredis.NewClient(clients, redlock.WithRestartGuard(0)) // the masters started just now
	require.NoError(t, err)
	assert.Equal(t, 3, lc.Nodes())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := lc.TryLock(ctx, "newclient", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	require.NoError(t, lc.Close())

	for i, c := range clients {
		require.NoError(t, c.Ping(ctx).Err(), "client %d", i)
		st := c.PoolStats()
		assert.Equal(t, st.TotalConns, st.IdleConns, "client %d: the lock's connections came back to the pool", i)
	}
}

func TestNewClient_BadInput_IsInvalid(t *testing.T) {
	standalone := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer standalone.Close()
	failover := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:1"}})
	defer failover.Close()
	for _, tc := range []struct {
		name    string
		clients []redis.UniversalClient
		opts    []redlock.Option
		says    string
	}{
		{"no clients", nil, nil, "no nodes"},
		{"nil client", []redis.UniversalClient{standalone, nil}, nil, "client 1: the client is nil"},
		{"unnamed failover client", []redis.UniversalClient{failover}, nil, "client 0: a Sentinel failover client"},
		{"same client twice", []redis.UniversalClient{standalone, standalone}, nil, "listed once"},
		{"nil option", []redis.UniversalClient{standalone}, []redlock.Option{nil}, "option 0 is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := goredis.NewClient(tc.clients, tc.opts...)
			assert.ErrorIs(t, err, redlock.ErrInvalid)
			assert.ErrorContains(t, err, tc.says)
			assert.Nil(t, c)
		})
	}
}
