package goredis

import (
	"context"
	"runtime"
	"sync"
	"weak"

	"github.com/redis/go-redis/v9"
)

// cluster routes calls through a Redis Cluster client: each goes to the
// master of its first key's slot, through that node's own client, and the
// dials of each node are counted apart, by address.
type cluster struct {
	client *redis.ClusterClient

	mu       sync.Mutex // serialises hooking a node client
	counters sync.Map   // node address → *dialCounter; a new client for an address keeps counting on
	watched  sync.Map   // weak.Pointer[redis.Client] → *readiness: node clients whose dials are counted
}

func newCluster(client *redis.ClusterClient) *cluster {
	c := &cluster{client: client}
	// Node clients made from now on are watched before they open anything.
	client.OnNewNode(func(node *redis.Client) { c.watch(node, false) })
	return c
}

// route returns the master of the slot of keys[0], as the client knows the
// cluster now.
func (c *cluster) route(ctx context.Context, keys []string) (*target, error) {
	if len(keys) == 0 {
		return nil, invalid("a call to a cluster needs a key to route it by")
	}
	node, err := c.client.MasterForKey(ctx, keys[0])
	if err != nil {
		return nil, err
	}
	dials, ready := c.watch(node, true)
	return &target{client: node, server: node.Options().Addr, dials: dials, ready: ready}, nil
}

// watch makes sure node's dials are counted, and returns the counter of its
// address and the node client's readiness. A node client that existed before (older than New) may have
// opened connections nobody counted: its count then goes up by one, so that
// the next call asks the guard's questions again.
func (c *cluster) watch(node *redis.Client, existing bool) (*dialCounter, *readiness) {
	key := weak.Make(node)
	d := c.counter(node.Options().Addr)
	if r, ok := c.watched.Load(key); ok {
		return d, r.(*readiness)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.watched.Load(key); ok {
		return d, r.(*readiness)
	}
	node.AddHook(d)
	if existing {
		d.n.Add(1)
	}
	r := newReadiness(node.Options().Protocol)
	c.watched.Store(key, r)
	// Forget the client once it is gone, so that node clients replaced
	// over the years do not pile up here.
	runtime.AddCleanup(node, func(k weak.Pointer[redis.Client]) { c.watched.Delete(k) }, key)
	return d, r
}

func (c *cluster) counter(addr string) *dialCounter {
	if d, ok := c.counters.Load(addr); ok {
		return d.(*dialCounter)
	}
	d, _ := c.counters.LoadOrStore(addr, &dialCounter{})
	return d.(*dialCounter)
}
