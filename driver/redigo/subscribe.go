package redigo

import (
	"context"
	"sync"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/driver"
)

// Subscribe opens a connection outside the pool for release announcements:
// see driver.Master.
func (r *Redis) Subscribe(ctx context.Context) (driver.Subscription, error) {
	conn, err := r.dial(ctx)
	if err != nil {
		return nil, err
	}
	return &subscription{conn: conn}, nil
}

// subscription is a redigo connection in pub/sub mode: SUBSCRIBE for one
// master, SSUBSCRIBE for a Cluster's shard master (a shardsub.Conn). Writes
// are serialised; the reader needs no lock, as redigo's connection reads
// and writes independently.
type subscription struct {
	mu   sync.Mutex
	conn redis.Conn
}

func (s *subscription) Subscribe(channels ...string) error {
	return s.send("SUBSCRIBE", channels)
}

func (s *subscription) Unsubscribe(channels ...string) error {
	return s.send("UNSUBSCRIBE", channels)
}

// SSubscribe sends SSUBSCRIBE, bounded by the write timeout rather than
// ctx: redigo takes no ctx for a write.
func (s *subscription) SSubscribe(_ context.Context, channels ...string) error {
	return s.send("SSUBSCRIBE", channels)
}

// SUnsubscribe sends SUNSUBSCRIBE, bounded by the write timeout.
func (s *subscription) SUnsubscribe(_ context.Context, channels ...string) error {
	return s.send("SUNSUBSCRIBE", channels)
}

// send writes one command with the channels as arguments.
func (s *subscription) send(cmd string, channels []string) error {
	if len(channels) == 0 {
		return nil
	}
	args := make([]any, len(channels))
	for i, ch := range channels {
		args[i] = ch
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.conn.Send(cmd, args...); err != nil {
		return err
	}
	return s.conn.Flush()
}

// Receive returns the next message or confirmation, plain or sharded, and
// skips the rest (a PONG). redigo's PubSubConn knows no sharded pushes.
func (s *subscription) Receive() (driver.Message, error) {
	for {
		v, err := redis.Values(redis.ReceiveWithTimeout(s.conn, 0))
		if err != nil {
			return driver.Message{}, serverError(err)
		}
		if len(v) < 2 {
			continue
		}
		kind, _ := redis.String(v[0], nil)
		ch, _ := redis.String(v[1], nil)
		switch kind {
		case "message", "smessage":
			return driver.Message{Kind: driver.Published, Channel: ch}, nil
		case "subscribe", "ssubscribe":
			return driver.Message{Kind: driver.Subscribed, Channel: ch}, nil
		case "unsubscribe", "sunsubscribe":
			return driver.Message{Kind: driver.Unsubscribed, Channel: ch}, nil
		}
	}
}

func (s *subscription) Close() error { return s.conn.Close() }
