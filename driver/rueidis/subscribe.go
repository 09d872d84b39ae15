package rueidisdriver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
)

// errClosed ends Receive once the subscription is closed.
var errClosed = errors.New("rueidisdriver: subscription closed")

// Subscribe opens a subscription for release announcements: see
// driver.Master. It returns at ctx's deadline.
//
// Through a standalone or Sentinel client it is a dedicated connection of
// the client's (Client.Dedicate), that no other command shares, subscribed
// with SUBSCRIBE.
//
// Through a cluster client it is sharded pub/sub (SSUBSCRIBE), as the lock
// announces releases with SPUBLISH there (see Sharded): a dedicated
// connection per shard master, through that master's node client
// (Client.Nodes), opened as channels of its slots are subscribed. Receive
// fails when one of them does, or when a master drops a channel because its
// slot moved to another master, so that the lock subscribes again and
// reaches the new owner.
func (m *Master) Subscribe(ctx context.Context) (driver.Subscription, error) {
	if m.cluster {
		return m.subscribeSharded(ctx)
	}
	s, err := subscribe(ctx, m.client, m.timeout)
	if err != nil {
		return nil, err // not a nil *subscription in the interface
	}
	return s, nil
}

// subscribe opens a subscription on a dedicated connection of client's,
// which answers within ctx. timeout bounds its Subscribe and Unsubscribe.
func subscribe(ctx context.Context, client rueidis.Client, timeout time.Duration) (*subscription, error) {
	dc, err := dedicatePubSub(ctx, client)
	if err != nil {
		return nil, err
	}
	s := &subscription{dc: dc, timeout: timeout, wake: make(chan struct{}, 1)}
	s.ended = dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(msg rueidis.PubSubMessage) {
			s.push(driver.Message{Kind: driver.Published, Channel: msg.Channel, Payload: msg.Message})
		},
		OnSubscription: func(sub rueidis.PubSubSubscription) {
			switch sub.Kind {
			case "subscribe", "ssubscribe":
				s.push(driver.Message{Kind: driver.Subscribed, Channel: sub.Channel})
			case "unsubscribe", "sunsubscribe":
				s.push(driver.Message{Kind: driver.Unsubscribed, Channel: sub.Channel})
			}
		},
	})
	// The connection is dialled by now; make sure it answers within ctx.
	if err := dc.Do(ctx, dc.B().Ping().Build()).Error(); err != nil {
		dc.Close()
		return nil, err
	}
	return s, nil
}

// dedicatePubSub takes a dedicated connection of client's for pub/sub.
// rueidis opens it without a ctx, bounded by the client's dial timeout;
// dedicatePubSub returns at ctx's deadline all the same, and a connection
// that arrives later is closed at once.
func dedicatePubSub(ctx context.Context, client rueidis.Client) (rueidis.DedicatedClient, error) {
	got := make(chan rueidis.DedicatedClient, 1)
	go func() {
		dc, _ := client.Dedicate()
		got <- dc
	}()
	select {
	case dc := <-got:
		return dc, nil
	case <-ctx.Done():
		go func() { (<-got).Close() }()
		return nil, ctx.Err()
	}
}

// subscription is a dedicated rueidis connection with pub/sub hooks. The
// hooks run on rueidis' reading goroutine and must not block it, so they
// queue events for Receive without bound; the lock reads them as they come.
//
// On a cluster client it is the connection to one shard master of a
// sharded subscription (a shardsub.Conn).
type subscription struct {
	dc      rueidis.DedicatedClient
	timeout time.Duration
	ended   <-chan error // closed when the hooks are called no more

	mu     sync.Mutex
	queue  []driver.Message
	closed bool
	wake   chan struct{} // a token when queue is not empty
}

func (s *subscription) push(msg driver.Message) {
	s.mu.Lock()
	s.queue = append(s.queue, msg)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscription) Subscribe(channels ...string) error {
	if len(channels) == 0 {
		return nil
	}
	return s.send(s.dc.B().Subscribe().Channel(channels...).Build())
}

func (s *subscription) Unsubscribe(channels ...string) error {
	if len(channels) == 0 {
		return nil
	}
	return s.send(s.dc.B().Unsubscribe().Channel(channels...).Build())
}

// SSubscribe sends SSUBSCRIBE within ctx. rueidis returns once the master
// confirmed the first channel; the confirmations come through Receive.
func (s *subscription) SSubscribe(ctx context.Context, channels ...string) error {
	return s.dc.Do(ctx, s.dc.B().Ssubscribe().Channel(channels...).Build()).Error()
}

// SUnsubscribe sends SUNSUBSCRIBE within ctx.
func (s *subscription) SUnsubscribe(ctx context.Context, channels ...string) error {
	return s.dc.Do(ctx, s.dc.B().Sunsubscribe().Channel(channels...).Build()).Error()
}

// send writes a (un)subscription within the timeout; rueidis returns once
// it is written, and the master's confirmations come through the hooks.
func (s *subscription) send(cmd rueidis.Completed) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	return s.dc.Do(ctx, cmd).Error()
}

func (s *subscription) Receive() (driver.Message, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			msg := s.queue[0]
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return msg, nil
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return driver.Message{}, errClosed
		}
		select {
		case <-s.wake:
		case err, ok := <-s.ended:
			if ok && err != nil {
				return driver.Message{}, err
			}
			s.mu.Lock()
			s.closed = true
			s.mu.Unlock()
		}
	}
}

func (s *subscription) Close() error {
	s.dc.Close()
	return nil
}
