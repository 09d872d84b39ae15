package redlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// subscriber holds one master's pub/sub connection and reconnects it.
type subscriber struct {
	h    *hub
	node int
	cond *condition // how the connection fares, logged when it changes

	mu      sync.Mutex // guards conn, want, changes and stopped
	conn    driver.Subscription
	want    map[string]bool
	changes map[string]bool // while connected, channels whose want changed since the writer last looked: subscribe or not
	changed chan struct{}   // 1-buffered: changes has some
	stopped bool
}

func newSubscriber(h *hub, node int, cond *condition) *subscriber {
	return &subscriber{h: h, node: node, cond: cond, want: map[string]bool{}, changes: map[string]bool{}, changed: make(chan struct{}, 1)}
}

// subscribe and unsubscribe change whether the connection listens on ch.
// They leave the write to the connection's writer (see write), and return
// at once: they run under the hub's lock, on the way of every Lock of the
// client, and a driver's write can wait on a master that answers nothing
// (go-redis reconnects a PubSub inside it, holding it for its own dial and
// read timeouts).
func (s *subscriber) subscribe(ch string)   { s.set(ch, true) }
func (s *subscriber) unsubscribe(ch string) { s.set(ch, false) }

func (s *subscriber) set(ch string, on bool) {
	s.mu.Lock()
	if on {
		s.want[ch] = true
	} else {
		delete(s.want, ch)
	}
	connected := s.conn != nil
	if connected { // else the next connection asks for want
		s.changes[ch] = on
	}
	s.mu.Unlock()
	if connected {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
}

// write asks conn for the channels in chans, then for each change of what
// is wanted until done is closed. A failed write shows up in the reader,
// which reconnects; a write that hangs ends when the reader closes conn.
func (s *subscriber) write(conn driver.Subscription, chans []string, done <-chan struct{}) {
	for {
		if len(chans) > 0 {
			conn.Subscribe(chans...)
		}
		var off []string
		select {
		case <-s.changed:
		case <-done:
			return
		}
		chans = chans[:0]
		s.mu.Lock()
		for ch, on := range s.changes {
			if on {
				chans = append(chans, ch)
			} else {
				off = append(off, ch)
			}
		}
		clear(s.changes)
		s.mu.Unlock()
		if len(off) > 0 {
			conn.Unsubscribe(off...)
		}
	}
}

// stop ends the subscriber: run returns once its reader is unblocked. The
// connection is closed outside s.mu, as a Close can wait on a master that
// answers nothing, and the Lock path takes s.mu.
func (s *subscriber) stop() {
	s.mu.Lock()
	s.stopped = true
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		conn.Close() // unblocks the reader
	}
}

// silentRedial is the least wait before redialling a master that answered
// no dial.
const silentRedial = 500 * time.Millisecond

// run keeps the connection up, with capped exponential backoff between
// tries. The backoff starts over only once a subscription was confirmed: a
// master that accepts the connection but refuses SUBSCRIBE (an ACL without
// the channels) is not redialled in a tight loop.
func (s *subscriber) run() {
	c := s.h.c
	backoff := 10 * time.Millisecond
	for {
		ctx, cancel := c.o.clock.WithTimeout(context.Background(), max(c.o.nodeTimeout, 500*time.Millisecond))
		conn, err := c.nodes[s.node].subscribe(ctx)
		unanswered := err != nil && ctx.Err() != nil // whatever error the driver made of its end
		cancel()
		if errors.Is(err, errNoPubSub) {
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
			chans := make([]string, 0, len(s.want))
			for ch := range s.want {
				chans = append(chans, ch)
			}
			clear(s.changes) // chans has them
			s.mu.Unlock()
			done, wrote := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(wrote)
				s.write(conn, chans, done)
			}()

			var confirmed bool
			confirmed, err = s.receive(conn)

			s.mu.Lock()
			s.conn = nil
			stopped := s.stopped
			s.mu.Unlock()
			if !stopped { // stop closes the connection itself
				conn.Close() // ends a write that hangs
			}
			close(done)
			<-wrote
			s.h.disconnected(s.node)
			if stopped {
				return
			}
			if confirmed {
				backoff = 10 * time.Millisecond
			}
		}
		s.cond.note(err)
		if unanswered || timedOut(err) {
			// The master answered no dial: it is stopped, or cut off. A
			// redial at once would wait out a dial timeout again, and queue
			// one more connection on a stopped master, so that each client
			// dialled it about twice a second.
			backoff = max(backoff, silentRedial)
		}
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
func (s *subscriber) receive(conn driver.Subscription) (confirmed bool, err error) {
	names := s.h.c.names()
	for {
		m, err := conn.Receive()
		if err != nil {
			return confirmed, err
		}
		key, ours := names.KeyOf(m.Channel)
		switch m.Kind {
		case driver.Published:
			if ours {
				s.h.announced(key, m.Payload)
			}
		case driver.Subscribed, driver.Unsubscribed:
			if ours {
				s.h.confirm(s.node, key, m.Kind == driver.Subscribed)
			}
			if m.Kind == driver.Subscribed && !confirmed {
				confirmed = true
				s.cond.note(nil)
			}
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

// errNoPubSub is the error of a node that can never announce releases, as
// the in-memory nodes of the algorithm's tests: waiters there use their
// backoff. Every driver.Master can subscribe.
var errNoPubSub = errors.New("node has no pub/sub")

// markDeaf records a master that can never announce releases.
func (h *hub) markDeaf() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deaf++
	if len(h.subs)-h.deaf == h.need-1 {
		close(h.confirmOutOfReach)
	}
}
