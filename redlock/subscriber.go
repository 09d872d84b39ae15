package redlock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// subscriber holds one master's pub/sub connection and reconnects it.
type subscriber struct {
	h    *hub
	node int
	cond *condition // how the connection fares, logged when it changes

	mu      sync.Mutex // guards conn's writer side, want and stopped
	conn    redis.Conn
	want    map[string]bool
	stopped bool
}

func (s *subscriber) subscribe(ch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.want[ch] = true
	s.send("SUBSCRIBE", ch)
}

func (s *subscriber) unsubscribe(ch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.want, ch)
	s.send("UNSUBSCRIBE", ch)
}

// send writes a command if connected; s.mu must be held. A failed write
// shows up in the reader, which reconnects and subscribes again.
func (s *subscriber) send(cmd string, chans ...any) {
	if s.conn == nil || len(chans) == 0 {
		return
	}
	if s.conn.Send(cmd, chans...) == nil {
		s.conn.Flush()
	}
}

func (s *subscriber) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.conn != nil {
		s.conn.Close() // unblocks the reader
	}
}

// run keeps the connection up, with capped exponential backoff between
// tries. The backoff starts over only once a subscription was confirmed: a
// master that accepts the connection but refuses SUBSCRIBE (an ACL without
// the channels) is not redialled in a tight loop.
func (s *subscriber) run() {
	c := s.h.c
	backoff := 10 * time.Millisecond
	for {
		ctx, cancel := c.o.clock.WithTimeout(context.Background(), max(c.o.nodeTimeout, 500*time.Millisecond))
		conn, err := c.nodes[s.node].subscriber(ctx)
		cancel()
		if errors.Is(err, errNoPubSub) {
			c.o.logger.Debug("redlock: no release announcements from master; waiters there use backoff",
				"addr", c.nodes[s.node].addr(), "err", err)
			s.h.markDeaf()
			return
		}
		if err == nil {
			s.mu.Lock()
			if s.stopped {
				s.mu.Unlock()
				conn.Close()
				return
			}
			s.conn = conn
			chans := make([]any, 0, len(s.want))
			for ch := range s.want {
				chans = append(chans, ch)
			}
			s.send("SUBSCRIBE", chans...)
			s.mu.Unlock()

			var confirmed bool
			confirmed, err = s.receive(conn)

			s.mu.Lock()
			s.conn = nil
			stopped := s.stopped
			s.mu.Unlock()
			conn.Close()
			s.h.disconnected(s.node)
			if stopped {
				return
			}
			if confirmed {
				backoff = 10 * time.Millisecond
			}
		}
		s.cond.note(err)
		t := c.o.clock.NewTimer(backoff)
		select {
		case <-c.closing:
			t.Stop()
			return
		case <-t.C():
		}
		backoff = min(2*backoff, time.Second)
	}
}

// receive reads announcements and confirmations until the connection
// fails. It reports whether a subscription was confirmed, and why it ended.
func (s *subscriber) receive(conn redis.Conn) (confirmed bool, err error) {
	psc := redis.PubSubConn{Conn: conn}
	prefix := s.h.c.names().channel("")
	for {
		switch v := psc.ReceiveWithTimeout(0).(type) {
		case redis.Message:
			if key, ok := strings.CutPrefix(v.Channel, prefix); ok {
				s.h.notify(key)
			}
		case redis.Subscription:
			if key, ok := strings.CutPrefix(v.Channel, prefix); ok {
				s.h.confirm(s.node, key, v.Kind == "subscribe")
			}
			if v.Kind == "subscribe" && !confirmed {
				confirmed = true
				s.cond.note(nil)
			}
		case error:
			return confirmed, v
		}
	}
}
