package bench

import (
	"strings"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	goredisdriver "github.com/quorumlock/quorumlock/driver/goredis"
	"github.com/quorumlock/quorumlock/driver/redigo"
	rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
	"github.com/quorumlock/quorumlock/redlock"
)

// lockNode is one node of a lock's quorum: a standalone master, or a Redis
// Cluster reached through its seeds.
type lockNode struct {
	seeds   []string // "host:port"; one for a standalone master
	cluster bool
}

// standaloneNodes returns a standalone node per address.
func standaloneNodes(addrs []string) []lockNode {
	ns := make([]lockNode, len(addrs))
	for i, a := range addrs {
		ns[i] = lockNode{seeds: []string{a}}
	}
	return ns
}

// url is the node as redigo.Open takes it: the address, or a
// redis+cluster:// URL listing the seeds.
func (n lockNode) url() string {
	if n.cluster {
		return "redis+cluster://" + strings.Join(n.seeds, ",")
	}
	return n.seeds[0]
}

// nodeNames are the contenders newNodeContender makes on standalone
// masters and on clusters alike, in table order, besides quorumlock.
func nodeNames() []string {
	return []string{"quorumlock-goredis", "quorumlock-rueidis", "redsync-goredis", "redsync-rueidis"}
}

// newNodeContender returns the named contender over nodes, its commands
// counted in sent, closed with the test:
//
//   - quorumlock: the library over redigo.Open: a redigo.Redis for a
//     master, a redigo.Cluster for a redis+cluster:// URL;
//   - quorumlock-goredis: the library over the go-redis adapter, with a
//     *goredis.Client per master or a *goredis.ClusterClient per cluster;
//   - quorumlock-rueidis: the library over the rueidis adapter, with a
//     rueidis client per master or per cluster;
//   - redsync-goredis: redsync with its go-redis v9 adapter, on the same
//     go-redis clients;
//   - redsync-rueidis: redsync with its rueidis adapter (over
//     rueidiscompat), on the same rueidis clients.
//
// The commands are counted where they leave the client: a wrapped driver
// for quorumlock (as newQuorumLock), a go-redis hook, a wrapped rueidis
// client.
func newNodeContender(tb testing.TB, name string, nodes []lockNode, sent *atomic.Int64) Locker {
	tb.Helper()
	switch name {
	case "redsync-goredis":
		clients := make([]goredis.UniversalClient, len(nodes))
		for i, n := range nodes {
			clients[i] = newGoRedis(n, sent)
		}
		r := NewRedsyncGoRedis(clients, lockTTL)
		tb.Cleanup(func() { r.Close() })
		return r
	case "redsync-rueidis":
		clients := make([]rueidis.Client, len(nodes))
		for i, n := range nodes {
			c, err := NewRueidisClient(n.seeds)
			require.NoError(tb, err, "%s on %v", name, n.seeds)
			clients[i] = countedRueidis{c, sent}
		}
		r := NewRedsyncRueidis(clients, lockTTL)
		tb.Cleanup(func() { r.Close() })
		return r
	case "quorumlock", "quorumlock-goredis", "quorumlock-rueidis":
	default:
		tb.Fatalf("no contender %q", name)
	}
	ms := make([]driver.Master, len(nodes))
	for i, n := range nodes {
		var (
			m   driver.Master
			err error
		)
		switch name {
		case "quorumlock":
			m, err = redigo.Open(n.url())
			if err == nil {
				m = counted(m, sent)
			}
		case "quorumlock-goredis":
			m, err = goredisdriver.New(newGoRedis(n, sent), goredisdriver.WithCloseClient())
		default:
			m, err = newRueidisMaster(n, sent)
		}
		require.NoError(tb, err, "%s on %v", name, n.seeds)
		tb.Cleanup(func() { m.Close() }) // after the client's: cleanups run last first
		ms[i] = m
	}
	c, err := redlock.New(ms, redlock.WithRestartGuard(0))
	require.NoError(tb, err)
	q := NewQuorumLock(c, lockTTL)
	tb.Cleanup(func() { q.Close() })
	return q
}

// newGoRedis returns a go-redis client to n, a cluster client for a
// cluster, counting its commands in sent.
func newGoRedis(n lockNode, sent *atomic.Int64) goredis.UniversalClient {
	var c goredis.UniversalClient
	if n.cluster {
		c = NewGoRedisCluster(n.seeds)
	} else {
		c = NewGoRedisClient(n.seeds[0])
	}
	countGoRedis(c, sent)
	return c
}

// newRueidisMaster returns the rueidis adapter over a client to n that
// counts its commands in sent; closing it closes the client.
func newRueidisMaster(n lockNode, sent *atomic.Int64) (driver.Master, error) {
	client, err := NewRueidisClient(n.seeds)
	if err != nil {
		return nil, err
	}
	m, err := rueidisdriver.New(countedRueidis{client, sent}, rueidisdriver.WithCloseClient())
	if err != nil {
		client.Close()
		return nil, err
	}
	return m, nil
}
