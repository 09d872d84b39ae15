package redigo

import (
	"time"

	"context"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo/internal/pipeline"
)

// Subscribe opens a connection of its own for release announcements: see
// driver.Master.
func (r *Redis) Subscribe(ctx context.Context) (driver.Subscription, error) {
	nc, err := r.dial(ctx)
	if err != nil {
		return nil, err
	}
	return &subscription{conn: pipeline.NewConn(nc, r.write)}, nil
}

// subscription is a connection in pub/sub mode: SUBSCRIBE for one master,
// SSUBSCRIBE for a Cluster's shard master (a shardsub.Conn). Writes are
// serialised by the connection and bounded by the write timeout, not by a
// ctx; Receive is the one reader's.
type subscription struct{ conn *pipeline.Conn }

func (s *subscription) Subscribe(channels ...string) error {
	return s.send("SUBSCRIBE", channels)
}

func (s *subscription) Unsubscribe(channels ...string) error {
	return s.send("UNSUBSCRIBE", channels)
}

// SSubscribe sends SSUBSCRIBE, bounded by the write timeout rather than ctx.
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
	return s.conn.Send(append([]string{cmd}, channels...))
}

// Receive returns the next message or confirmation, plain or sharded, and
// skips the rest (a PONG). An error reply is returned as the error.
func (s *subscription) Receive() (driver.Message, error) {
	for {
		v, err := s.conn.Receive(time.Time{})
		if err != nil {
			return driver.Message{}, err
		}
		if e, ok := v.(driver.Error); ok {
			return driver.Message{}, e
		}
		f, _ := v.([]any)
		if len(f) < 2 {
			continue
		}
		kind, _ := f[0].(string)
		ch, _ := f[1].(string)
		switch kind {
		case "message", "smessage":
			var payload string
			if len(f) > 2 {
				payload, _ = f[2].(string)
			}
			return driver.Message{Kind: driver.Published, Channel: ch, Payload: payload}, nil
		case "subscribe", "ssubscribe":
			return driver.Message{Kind: driver.Subscribed, Channel: ch}, nil
		case "unsubscribe", "sunsubscribe":
			return driver.Message{Kind: driver.Unsubscribed, Channel: ch}, nil
		}
	}
}

func (s *subscription) Close() error { return s.conn.Close() }
