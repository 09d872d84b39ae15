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

// ready waits until enough masters confirmed the subscription, at most timeout.
func (w *waiter) ready(ctx context.Context, timeout time.Duration) {
	t := w.h.c.o.clock.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.q.ready:
	case <-w.h.confirmOutOfReach:
	case <-t.C():
	case <-ctx.Done():
	case <-w.h.c.closing:
	}
}

// awaitingConfirmation reports whether a release could go unheard only for
// a moment: enough pub/sub connections are up, but they have not all
// confirmed this key's subscription yet. During an outage (too few connections) it is
// false: then the backoff paces the retries.
func (w *waiter) awaitingConfirmation() bool {
	h := w.h
	h.mu.Lock()
	confirmed := w.q.nconf
	h.mu.Unlock()
	if confirmed >= h.need {
		return false
	}
	up := 0
	for _, s := range h.subs {
		s.mu.Lock()
		if s.conn != nil {
			up++
		}
		s.mu.Unlock()
	}
	return up >= h.need
}

// confirm records that master node confirmed (on) or dropped the
// subscription to key's channel.
func (h *hub) confirm(node int, key string, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	if q == nil || q.confirmed[node] == on {
		return
	}
	q.confirmed[node] = on
	if !on {
		q.nconf--
		return
	}
	q.nconf++
	if q.nconf >= h.need && !q.readied {
		q.readied = true
		close(q.ready)
	}
}

// disconnected forgets a master's confirmations when its connection drops.
func (h *hub) disconnected(node int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range h.queues {
		if q.confirmed[node] {
			q.confirmed[node] = false
			q.nconf--
		}
	}
}

// markDeaf records a master that can never announce releases.
func (h *hub) markDeaf() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deaf++
	if len(h.subs)-h.deaf == h.need-1 {
		close(h.confirmOutOfReach)
	}
}
