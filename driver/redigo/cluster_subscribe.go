package redigo

import (
	"context"
	"errors"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo/internal/pipeline"
	"github.com/quorumlock/quorumlock/internal/shardsub"
)

// Subscribe returns a subscription over sharded pub/sub (SSUBSCRIBE): see
// driver.Master. It reads the slot map within ctx if the driver has none;
// the connections, one per shard master, are opened as channels of the
// master's slots are subscribed, each within the dial timeout, and written
// within the write timeout.
//
// Receive returns an error, after which the subscription is closed, when a
// shard's connection fails, a write fails, or a master drops a channel by
// itself (it sends SUNSUBSCRIBE when the channel's slot moves to another
// master, as in a failover or a resharding): the caller subscribes again,
// on a new subscription, which the slot map, read again, then routes to the
// new owners. See package shardsub.
func (c *Cluster) Subscribe(ctx context.Context) (driver.Subscription, error) {
	if _, err := c.current(ctx); err != nil {
		return nil, err
	}
	return shardsub.New(clusterShards{c}, shardsub.Options{Name: "redigo: cluster", Closed: errClusterClosed}), nil
}

// clusterShards is the cluster's slot map and nodes, as a subscription
// uses them.
type clusterShards struct{ c *Cluster }

// Master returns the master of channel's slot as the slot map has it,
// without reading the map again: Subscribe has read it.
func (s clusterShards) Master(_ context.Context, channel string) (shardsub.Shard, error) {
	m := s.c.slots.Load()
	if m == nil {
		return shardsub.Shard{}, errors.New("redigo: cluster: no slot map")
	}
	addr, err := m.ownerOf(channel)
	if err != nil {
		return shardsub.Shard{}, err
	}
	return shardsub.Shard{Addr: addr, Dial: func(ctx context.Context) (shardsub.Conn, error) {
		n, err := s.c.node(addr)
		if err != nil {
			return nil, err
		}
		nc, err := n.dial(ctx) // bounded by the dial timeout
		if err != nil {
			return nil, err
		}
		return &subscription{conn: pipeline.NewConn(nc, n.write)}, nil
	}}, nil
}

// Reload has the next call read the slot map first.
func (s clusterShards) Reload() { s.c.stale.Store(true) }
