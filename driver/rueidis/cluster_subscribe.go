package rueidisdriver

import (
	"context"
	"fmt"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/shardsub"
)

// subscribeSharded returns a cluster client's subscription: sharded pub/sub
// (SSUBSCRIBE), one dedicated connection per shard master, opened as
// channels of its slots are subscribed (see package shardsub). The
// cluster's slot map is read within ctx if the driver has none; each
// Subscribe and Unsubscribe is bounded by WithTimeout.
func (m *Master) subscribeSharded(ctx context.Context) (driver.Subscription, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.timeout)
		defer cancel()
	}
	if server, version := m.slots.owner(0); server == "" {
		if err := m.slots.refresh(ctx, m.client, version); err != nil {
			return nil, err
		}
	}
	return shardsub.New(clusterShards{m}, shardsub.Options{Name: "rueidisdriver: cluster", Timeout: m.timeout, Closed: errClosed}), nil
}

// clusterShards is the driver's slot map and the client's node clients, as
// a subscription uses them.
type clusterShards struct{ m *Master }

// Master returns the master of channel's slot as the slot map has it,
// reading the map within ctx if it does not know the slot.
func (s clusterShards) Master(ctx context.Context, channel string) (shardsub.Shard, error) {
	m := s.m
	slot := slotOf(channel)
	addr, version := m.slots.owner(slot)
	if addr == "" {
		if err := m.slots.refresh(ctx, m.client, version); err != nil {
			return shardsub.Shard{}, err
		}
		if addr, _ = m.slots.owner(slot); addr == "" {
			return shardsub.Shard{}, fmt.Errorf("no master serves slot %d", slot)
		}
	}
	return shardsub.Shard{Addr: addr, Dial: func(ctx context.Context) (shardsub.Conn, error) {
		node, ok := m.client.Nodes()[addr]
		if !ok {
			return nil, fmt.Errorf("slot %d's master %s is not among the client's nodes", slot, addr)
		}
		sub, err := subscribe(ctx, node, m.timeout)
		if err != nil {
			return nil, err
		}
		return sub, nil
	}}, nil
}

// Reload empties the slot map, to be read again before its next use.
func (s clusterShards) Reload() {
	_, version := s.m.slots.owner(0)
	s.m.slots.forget(version)
}
