package goredis

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/driver"
)

// Subscribe opens a subscription for release announcements: see
// driver.Master.
//
// Through a client of one server, it is a pub/sub connection of the client
// (SUBSCRIBE), opened, and the ACL user authenticated, before Subscribe
// returns.
//
// Through a cluster client, it is sharded pub/sub (SSUBSCRIBE), as the lock
// announces releases with SPUBLISH there (see Sharded): one connection per
// shard master, through that master's node client, opened as channels of its
// slots are subscribed. Receive fails when one of them does, or when a
// master drops a channel because its slot moved to another master, so that
// the lock subscribes again and reaches the new owner.
func (m *Master) Subscribe(ctx context.Context) (driver.Subscription, error) {
	if err := m.enter(); err != nil {
		return nil, err
	}
	defer m.inflight.Done()
	if m.cluster != nil {
		return m.subscribeSharded(ctx)
	}
	return within(m, ctx, func(ctx context.Context) (driver.Subscription, error) {
		ps := m.client.Subscribe(ctx)
		// go-redis connects on the first command; PING makes it connect
		// now. Its PONG comes through Receive, which skips it.
		if err := ps.Ping(ctx); err != nil {
			ps.Close()
			return nil, serverError(err, false)
		}
		return &subscription{ps: ps}, nil
	}, func(s driver.Subscription) { s.Close() })
}

// subscription is a go-redis PubSub that ends with the first error of its
// connection. go-redis would reconnect and subscribe again by itself; the
// lock instead needs to hear that the connection failed, as announcements
// sent meanwhile were lost, so the PubSub is closed at the first error and
// the lock opens another.
//
// On a cluster client it is the connection to one shard master of a
// sharded subscription (a shardsub.Conn), whose error replies may be a
// MOVED.
type subscription struct {
	ps      *redis.PubSub
	cluster bool

	once sync.Once
	err  error
}

func (s *subscription) Subscribe(channels ...string) error {
	if len(channels) == 0 {
		return nil
	}
	return s.ps.Subscribe(context.Background(), channels...)
}

func (s *subscription) Unsubscribe(channels ...string) error {
	if len(channels) == 0 {
		return nil // go-redis would unsubscribe from every channel
	}
	return s.ps.Unsubscribe(context.Background(), channels...)
}

// SSubscribe sends SSUBSCRIBE within ctx.
func (s *subscription) SSubscribe(ctx context.Context, channels ...string) error {
	return serverError(s.ps.SSubscribe(ctx, channels...), s.cluster)
}

// SUnsubscribe sends SUNSUBSCRIBE within ctx. channels are never none: see
// Unsubscribe.
func (s *subscription) SUnsubscribe(ctx context.Context, channels ...string) error {
	return serverError(s.ps.SUnsubscribe(ctx, channels...), s.cluster)
}

func (s *subscription) Receive() (driver.Message, error) {
	for {
		v, err := s.ps.Receive(context.Background())
		if err != nil {
			s.Close()
			return driver.Message{}, serverError(err, s.cluster)
		}
		switch v := v.(type) {
		case *redis.Message: // message or smessage
			return driver.Message{Kind: driver.Published, Channel: v.Channel, Payload: v.Payload}, nil
		case *redis.Subscription:
			switch v.Kind {
			case "subscribe", "ssubscribe":
				return driver.Message{Kind: driver.Subscribed, Channel: v.Channel}, nil
			case "unsubscribe", "sunsubscribe":
				return driver.Message{Kind: driver.Unsubscribed, Channel: v.Channel}, nil
			}
		}
		// A PONG, or a kind the lock does not use.
	}
}

func (s *subscription) Close() error {
	s.once.Do(func() { s.err = s.ps.Close() })
	return s.err
}
