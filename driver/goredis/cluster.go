package goredis

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// cluster routes calls through a Redis Cluster client: each goes to the
// master of its first key's slot, on the lanes the adapter keeps to that
// node (see target), through the node's own client.
type cluster struct {
	m      *Master
	client *redis.ClusterClient

	mu      sync.Mutex
	targets map[string]*target // node address → the target of its current node client
}

func newCluster(m *Master, client *redis.ClusterClient) *cluster {
	return &cluster{m: m, client: client, targets: map[string]*target{}}
}

// route returns the target of the master of the slot of keys[0], as the
// client knows the cluster now. When the client has a new node client for
// an address, the lanes of the old one are closed and new ones taken from
// the new client: connections fresh to the guard, which asks on them.
func (c *cluster) route(ctx context.Context, keys []string) (*target, error) {
	if len(keys) == 0 {
		return nil, invalid("a call to a cluster needs a key to route it by")
	}
	node, err := c.client.MasterForKey(ctx, keys[0])
	if err != nil {
		return nil, err
	}
	addr := node.Options().Addr
	c.mu.Lock()
	t := c.targets[addr]
	var old *target
	if t == nil || t.client != node {
		old, t = t, newTarget(c.m, node, addr, true)
		c.targets[addr] = t
	}
	c.mu.Unlock()
	if old != nil {
		old.close()
	}
	return t, nil
}

// close closes every node's lanes. A subscription may still route channels
// afterwards: its targets take no calls.
func (c *cluster) close() {
	c.mu.Lock()
	ts := make([]*target, 0, len(c.targets))
	for _, t := range c.targets {
		ts = append(ts, t)
	}
	c.mu.Unlock()
	for _, t := range ts {
		t.close()
	}
}
