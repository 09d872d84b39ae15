package pool

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
	return &subscription{psc: redis.PubSubConn{Conn: conn}}, nil
}

// subscription is a redigo pub/sub connection. Writes are serialised; the
// reader needs no lock, as redigo's connection reads and writes
// independently.
type subscription struct {
	mu  sync.Mutex
	psc redis.PubSubConn
}

func (s *subscription) Subscribe(channels ...string) error {
	return s.send("SUBSCRIBE", channels)
}

func (s *subscription) Unsubscribe(channels ...string) error {
	return s.send("UNSUBSCRIBE", channels)
}

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
	if err := s.psc.Conn.Send(cmd, args...); err != nil {
		return err
	}
	return s.psc.Conn.Flush()
}

func (s *subscription) Receive() (driver.Message, error) {
	for {
		switch v := s.psc.ReceiveWithTimeout(0).(type) {
		case redis.Message:
			return driver.Message{Kind: driver.Published, Channel: v.Channel}, nil
		case redis.Subscription:
			switch v.Kind {
			case "subscribe":
				return driver.Message{Kind: driver.Subscribed, Channel: v.Channel}, nil
			case "unsubscribe":
				return driver.Message{Kind: driver.Unsubscribed, Channel: v.Channel}, nil
			}
		case error:
			return driver.Message{}, serverError(v)
		}
	}
}

func (s *subscription) Close() error { return s.psc.Conn.Close() }
