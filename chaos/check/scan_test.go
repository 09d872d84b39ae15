package check

import (
	"context"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// TestScan_RealMasters_FindsLeftovers writes what a broken roll-back would
// leave on real masters and checks that the scan and C4 report it.
func TestScan_RealMasters_FindsLeftovers(t *testing.T) {
	servers := redistest.Start(t, 2, redistest.Ephemeral)
	addrs := redistest.Addrs(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	write := func(addr string, cmds ...[]any) {
		conn, err := redis.DialContext(ctx, "tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		for _, c := range cmds {
			_, err := conn.Do(c[0].(string), c[1:]...)
			require.NoError(t, err)
		}
	}
	write(addrs[0],
		[]any{"SET", "lock-a", "failed-token", "PX", 60000},
		[]any{"SET", "lock-b", "held-token", "PX", 60000},
		[]any{"SET", "quorumlock:fence:lock-a", 7}, // library bookkeeping: not a lock key
		[]any{"ZADD", "quorumlock:queue:{x}lock-a", 1, "w"},
		[]any{"PEXPIRE", "quorumlock:queue:{x}lock-a", 60000},
	)
	write(addrs[1],
		[]any{"HSET", "lock-c", "owner", "me", "hold:other-failed", 1},
		[]any{"SET", "lock-d", "held-token"},                         // no expiry
		[]any{"ZADD", "quorumlock:queue-leases:{x}lock-c", 1, "w"},   // a queue that never ends
		[]any{"ZADD", "sem-e", 1, "held-permit", 2, "failed-permit"}, // a semaphore's permits
		[]any{"PEXPIRE", "sem-e", 60000},
	)

	keys, errs := Scan(ctx, addrs)
	require.Empty(t, errs)
	assert.Len(t, keys, 7)
	r := Leftovers(keys, map[string]bool{"failed-token": true, "other-failed": true, "failed-permit": true})
	assert.False(t, r.OK())
	var failedKeys, noTTL []string
	for _, k := range r.Failed {
		failedKeys = append(failedKeys, k.Key)
	}
	for _, k := range r.NoTTL {
		noTTL = append(noTTL, k.Key)
	}
	assert.ElementsMatch(t, []string{"lock-a", "lock-c", "sem-e"}, failedKeys)
	assert.ElementsMatch(t, []string{"lock-c", "lock-d", "quorumlock:queue-leases:{x}lock-c"}, noTTL)
}

// TestScan_DeadMaster_ReportsItApart keeps the keys of the masters that
// answered and names the one that did not.
func TestScan_DeadMaster_ReportsItApart(t *testing.T) {
	servers := redistest.Start(t, 2, redistest.Ephemeral)
	require.NoError(t, servers[1].Kill())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys, errs := Scan(ctx, redistest.Addrs(servers))
	assert.Empty(t, keys)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "node 1")
}

// TestScanShards_KeysOfEveryMasterAreTheNodes scans a node of two masters,
// as a Redis Cluster of two shards would be, beside a node of one.
func TestScanShards_KeysOfEveryMasterAreTheNodes(t *testing.T) {
	servers := redistest.Start(t, 3, redistest.Ephemeral)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, key := range []string{"lock-a", "lock-b", "lock-c"} {
		conn, err := redis.DialContext(ctx, "tcp", servers[i].Addr())
		require.NoError(t, err)
		_, err = conn.Do("SET", key, "token", "PX", 60000)
		conn.Close()
		require.NoError(t, err)
	}
	keys, errs := ScanShards(ctx, [][]string{{servers[0].Addr(), servers[1].Addr()}, {servers[2].Addr()}})
	require.Empty(t, errs)
	got := map[string]int{}
	for _, k := range keys {
		got[k.Key] = k.Node
	}
	assert.Equal(t, map[string]int{"lock-a": 0, "lock-b": 0, "lock-c": 1}, got)
}
