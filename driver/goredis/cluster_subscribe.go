package goredis

import (
	"context"
	"errors"
	"time"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/shardsub"
)

// errSubClosed ends Receive once a subscription is closed, or once it failed
// and its error was returned.
var errSubClosed = errors.New("goredis: subscription closed")

// subscribeSharded returns a cluster client's subscription: sharded pub/sub
// (SSUBSCRIBE), one go-redis PubSub per shard master, each opened through
// that master's node client as channels of its slots are subscribed (see
// package shardsub). The client's slot map is read within ctx if it has
// none. Each Subscribe and Unsubscribe is bounded by the client's dial
// timeout.
//
// go-redis alone would reconnect a PubSub and subscribe again in silence,
// to the same node; the subscription instead ends with the first failure
// of its connections, or when a master drops a channel as its slot moved,
// and has the client read its slot map again.
func (m *Master) subscribeSharded(ctx context.Context) (driver.Subscription, error) {
	return within(m, ctx, func(ctx context.Context) (driver.Subscription, error) {
		// Any key will do: this loads the client's slot map if it has none.
		if _, err := m.cluster.client.MasterForKey(ctx, ""); err != nil {
			return nil, serverError(err, true)
		}
		timeout := m.cluster.client.Options().DialTimeout
		if timeout <= 0 {
			timeout = 5 * time.Second
		}
		return shardsub.New(clusterShards{m.cluster}, shardsub.Options{Name: "goredis: cluster", Timeout: timeout, Closed: errSubClosed}), nil
	}, func(s driver.Subscription) { s.Close() })
}

// clusterShards is the cluster client's slot map and node clients, as a
// subscription uses them.
type clusterShards struct{ c *cluster }

// Master returns the master of channel's slot as the client knows it.
func (s clusterShards) Master(ctx context.Context, channel string) (shardsub.Shard, error) {
	t, err := s.c.route(ctx, []string{channel})
	if err != nil {
		return shardsub.Shard{}, serverError(err, true)
	}
	return shardsub.Shard{Addr: t.server, Dial: func(ctx context.Context) (shardsub.Conn, error) {
		// The node client sets up a connection of its own first, as a
		// call through it would (see readiness).
		if err := t.ready.wait(ctx, t.client); err != nil {
			return nil, serverError(err, true)
		}
		ps := t.client.SSubscribe(ctx)
		// go-redis connects on the first command; PING makes it connect
		// now. Its PONG comes through Receive, which skips it.
		if err := ps.Ping(ctx); err != nil {
			ps.Close()
			return nil, serverError(err, true)
		}
		return &subscription{ps: ps, cluster: true}, nil
	}}, nil
}

// Reload has the client read the slot map again, in the background.
func (s clusterShards) Reload() { s.c.client.ReloadState(context.Background()) }
