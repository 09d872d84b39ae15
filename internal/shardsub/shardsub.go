package shardsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// Cluster is what a driver knows of a Redis Cluster's shards, as one
// subscription uses it.
type Cluster interface {
	// Master returns the master that owns channel's hash slot, as the
	// driver's slot map has it now, within ctx.
	Master(ctx context.Context, channel string) (Shard, error)
	// Reload has the driver read the slot map again before its next use,
	// without waiting for it: a subscription that failed may have met a
	// slot that moved.
	Reload()
}

// Shard is one shard master.
type Shard struct {
	// Addr names the master ("host:port"), in errors and among the
	// subscription's connections.
	Addr string
	// Dial opens a connection to the master for sharded pub/sub, within
	// ctx. A subscription dials each master once, when it first subscribes
	// a channel of the master's slots.
	Dial func(ctx context.Context) (Conn, error)
}

// Conn is one connection of a subscription to a shard master.
type Conn interface {
	// SSubscribe sends SSUBSCRIBE for channels, all of one slot, within
	// ctx. The master confirms each through Receive.
	SSubscribe(ctx context.Context, channels ...string) error
	// SUnsubscribe sends SUNSUBSCRIBE for channels, all of one slot, within
	// ctx. The master confirms each through Receive.
	SUnsubscribe(ctx context.Context, channels ...string) error
	// Receive waits for the master's next push: a message (smessage) as
	// driver.Published, a confirmation of SSUBSCRIBE or SUNSUBSCRIBE as
	// driver.Subscribed or driver.Unsubscribed; it skips others (a PONG). It
	// returns an error, an error reply of the master's as a driver.Error,
	// once the connection fails or is closed.
	Receive() (driver.Message, error)
	// Close closes the connection, which ends a waiting Receive.
	Close() error
}

// Options are a driver's settings of its subscriptions.
type Options struct {
	// Name starts the subscription's errors, e.g. "pool: cluster".
	Name string
	// Timeout bounds each Subscribe and Unsubscribe: routing, opening
	// connections and writing. Zero leaves them to the driver's own bounds.
	Timeout time.Duration
	// Closed is the error Receive, Subscribe and Unsubscribe return once the
	// subscription is closed.
	Closed error
}

// New returns a subscription over sharded pub/sub through c, with no channel
// and no connection yet.
func New(c Cluster, o Options) driver.Subscription {
	return &subscription{
		c:      c,
		o:      o,
		shards: map[string]*shard{},
		chans:  map[string]*shard{},
		leaves: map[string]int{},
		events: make(chan event, 64),
		kick:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
}

// subscription multiplexes one connection per shard master.
//
// Subscribe and Unsubscribe hold mu across their calls to the driver, which
// may wait for the master's confirmation (rueidis' Do does). The shards'
// readers, which take confirmations from the driver's Receive, take only
// qmu, never held across a call to the driver: they never wait for a
// Subscribe.
type subscription struct {
	c Cluster
	o Options

	mu     sync.Mutex        // serialises Subscribe and Unsubscribe; guards shards and chans
	shards map[string]*shard // by master address
	chans  map[string]*shard // channel → the shard it was subscribed on

	qmu    sync.Mutex
	local  []event        // confirmations given without a server, and failed writes
	leaves map[string]int // per channel, unsubscriptions asked and not yet confirmed
	closed bool

	events chan event    // from the shards' readers
	kick   chan struct{} // local has grown
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup
}

// shard is the subscription's connection to one shard master.
type shard struct {
	addr string
	conn Conn
}

type event struct {
	msg driver.Message
	err error // the subscription ends with it
}

// Subscribe groups the channels by hash slot and sends one SSUBSCRIBE per
// slot to the slot's master, on that master's connection, opened if need
// be. An error is also reported by Receive, which then ends the
// subscription, so that a caller who only watches Receive subscribes again.
func (s *subscription) Subscribe(channels ...string) error {
	if len(channels) == 0 {
		return nil
	}
	return s.perSlot(channels, func(ctx context.Context, group []string) error {
		sh, err := s.shard(ctx, group[0])
		if err == nil {
			if err = sh.conn.SSubscribe(ctx, group...); err != nil {
				err = fmt.Errorf("on %s: %w", sh.addr, err)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: SSUBSCRIBE %q: %w", s.o.Name, group, err)
		}
		for _, ch := range group {
			s.chans[ch] = sh
		}
		return nil
	})
}

// Unsubscribe sends SUNSUBSCRIBE for the channels, grouped by slot, on the
// connection each was subscribed on; a channel not subscribed is confirmed
// at once. An error is also reported by Receive, as for Subscribe.
func (s *subscription) Unsubscribe(channels ...string) error {
	return s.perSlot(channels, func(ctx context.Context, group []string) error {
		sh := s.chans[group[0]]
		s.qmu.Lock()
		for _, ch := range group {
			if sh == nil {
				s.local = append(s.local, event{msg: driver.Message{Kind: driver.Unsubscribed, Channel: ch}})
			} else {
				s.leaves[ch]++
				delete(s.chans, ch)
			}
		}
		s.qmu.Unlock()
		if sh == nil {
			s.wake()
			return nil
		}
		if err := sh.conn.SUnsubscribe(ctx, group...); err != nil {
			return fmt.Errorf("%s: SUNSUBSCRIBE %q on %s: %w", s.o.Name, group, sh.addr, err)
		}
		return nil
	})
}

// perSlot runs do on the channels of each slot in turn, holding s.mu,
// within one Options.Timeout. It stops at the first error, which Receive
// reports too.
func (s *subscription) perSlot(channels []string, do func(ctx context.Context, group []string) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isClosed() {
		return s.o.Closed
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if s.o.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, s.o.Timeout)
	}
	defer cancel()
	for _, group := range bySlot(channels) {
		if err := do(ctx, group); err != nil {
			return s.fail(err)
		}
	}
	return nil
}

// shard returns the connection to the master of channel's slot, opening it
// and starting its reader if there is none. s.mu is held.
func (s *subscription) shard(ctx context.Context, channel string) (*shard, error) {
	m, err := s.c.Master(ctx, channel)
	if err != nil {
		return nil, err
	}
	if sh := s.shards[m.Addr]; sh != nil {
		return sh, nil
	}
	conn, err := m.Dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("subscribing on %s: %w", m.Addr, err)
	}
	sh := &shard{addr: m.Addr, conn: conn}
	s.shards[m.Addr] = sh
	s.wg.Add(1)
	go s.read(sh)
	return sh, nil
}

// read passes the shard's events to Receive until its connection fails or
// the subscription is closed.
func (s *subscription) read(sh *shard) {
	defer s.wg.Done()
	for {
		ev := s.next(sh)
		select {
		case s.events <- ev:
		case <-s.done:
			return
		}
		if ev.err != nil {
			return
		}
	}
}

// next reads the shard's next event. A SUNSUBSCRIBE nobody asked for is
// the master dropping the channel, as its slot moved: the subscription
// ends.
func (s *subscription) next(sh *shard) event {
	msg, err := sh.conn.Receive()
	if err != nil {
		return event{err: fmt.Errorf("%s: subscription on %s: %w", s.o.Name, sh.addr, err)}
	}
	if msg.Kind == driver.Unsubscribed && !s.asked(msg.Channel) {
		return event{err: fmt.Errorf("%s: %s dropped the subscription to %q: its slot %d moved to another master", s.o.Name, sh.addr, msg.Channel, slot.Of(msg.Channel))}
	}
	return event{msg: msg}
}

// asked reports whether an unsubscription from ch was asked and not yet
// confirmed, and counts this confirmation as its.
func (s *subscription) asked(ch string) bool {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.leaves[ch] == 0 {
		return false
	}
	if s.leaves[ch]--; s.leaves[ch] == 0 {
		delete(s.leaves, ch)
	}
	return true
}

// fail queues err for Receive, which ends the subscription with it, and
// returns it.
func (s *subscription) fail(err error) error {
	s.qmu.Lock()
	s.local = append(s.local, event{err: err})
	s.qmu.Unlock()
	s.wake()
	return err
}

// wake tells Receive that local has grown.
func (s *subscription) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *subscription) isClosed() bool {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return s.closed
}

// Receive returns the next event of any shard. It returns an error once a
// shard's connection failed, its master dropped a channel, or a write
// failed; the subscription is then closed, the driver reads its slot map
// again before its next use, and later calls return Options.Closed.
func (s *subscription) Receive() (driver.Message, error) {
	for {
		s.qmu.Lock()
		if s.closed {
			s.qmu.Unlock()
			return driver.Message{}, s.o.Closed
		}
		if len(s.local) > 0 {
			ev := s.local[0]
			s.local = s.local[1:]
			s.qmu.Unlock()
			return s.deliver(ev)
		}
		s.qmu.Unlock()
		select {
		case ev := <-s.events:
			return s.deliver(ev)
		case <-s.kick:
		case <-s.done:
		}
	}
}

// deliver returns ev to Receive's caller, and ends the subscription with
// its error.
func (s *subscription) deliver(ev event) (driver.Message, error) {
	if ev.err == nil {
		return ev.msg, nil
	}
	s.Close()
	s.c.Reload()
	return driver.Message{}, ev.err
}

// Close closes every shard's connection and waits for their readers.
func (s *subscription) Close() error {
	s.qmu.Lock()
	if s.closed {
		s.qmu.Unlock()
		return nil
	}
	s.closed = true
	s.local = nil
	close(s.done)
	s.qmu.Unlock()
	// A Subscribe under way, bounded by Options.Timeout, holds s.mu: the
	// shards it opens are closed here too, and a later one finds the
	// subscription closed.
	s.mu.Lock()
	shards := s.shards
	s.shards = map[string]*shard{}
	s.mu.Unlock()
	var errs []error
	for _, sh := range shards {
		errs = append(errs, sh.conn.Close())
	}
	s.wg.Wait()
	return errors.Join(errs...)
}

// bySlot groups channels by hash slot, keeping their order.
func bySlot(channels []string) [][]string {
	var groups [][]string
	at := map[int]int{}
	for _, ch := range channels {
		sl := slot.Of(ch)
		i, ok := at[sl]
		if !ok {
			i = len(groups)
			at[sl] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], ch)
	}
	return groups
}
