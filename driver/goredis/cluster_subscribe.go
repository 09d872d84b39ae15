package goredis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// errSubClosed ends Receive once a subscription is closed, or once it failed
// and its error was returned.
var errSubClosed = errors.New("goredis: subscription closed")

// subscribeSharded returns a cluster client's subscription: sharded pub/sub
// (SSUBSCRIBE), one go-redis PubSub per shard master, each opened through
// that master's node client as channels of its slots are subscribed. The
// client's slot map is read within ctx if it has none.
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
		return &shardedSub{
			c:       m.cluster,
			timeout: timeout,
			shards:  map[string]*shardPubSub{},
			chans:   map[string]*shardPubSub{},
			leaves:  map[string]int{},
			events:  make(chan shardEvent, 64),
			kick:    make(chan struct{}, 1),
			done:    make(chan struct{}),
		}, nil
	}, func(s driver.Subscription) { s.Close() })
}

// shardedSub multiplexes one SSUBSCRIBE connection (a go-redis PubSub) per
// shard master.
//
// It ends, for good, with the first failure of any of its connections, or
// when a master drops a channel by itself: Redis sends SUNSUBSCRIBE for
// every channel of a slot that moves to another master (a failover, a
// resharding). go-redis alone would reconnect and subscribe again in
// silence, to the same node; the lock instead needs to hear of it, as
// announcements made meanwhile were lost, and subscribes again on a new
// subscription, which the client's slot map then routes to the new owners.
type shardedSub struct {
	c       *cluster
	timeout time.Duration // bounds opening a shard's connection and each write

	mu     sync.Mutex
	shards map[string]*shardPubSub // by master address
	chans  map[string]*shardPubSub // channel → the shard it was subscribed on
	leaves map[string]int          // per channel, unsubscriptions asked and not yet confirmed
	local  []driver.Message        // confirmations given without a server
	failed error                   // a write that failed, for Receive to report
	closed bool

	events chan shardEvent // from the shards' readers
	kick   chan struct{}   // local or failed has changed
	done   chan struct{}   // closed by Close
	wg     sync.WaitGroup
}

// shardPubSub is the pub/sub connection to one shard master.
type shardPubSub struct {
	addr string
	ps   *redis.PubSub
}

type shardEvent struct {
	msg driver.Message
	err error
}

// Subscribe groups the channels by hash slot (Redis takes channels of one
// slot only in one SSUBSCRIBE) and sends one SSUBSCRIBE per slot to the
// slot's master as the client knows it, on that master's connection, opened
// if need be. A channel routed to a node that no longer owns its slot is
// refused there (MOVED), which ends the subscription through Receive.
//
// An error is also reported by Receive, which then ends the subscription,
// so that a caller who only watches Receive subscribes again.
func (s *shardedSub) Subscribe(channels ...string) error {
	if len(channels) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errSubClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	for _, group := range bySlot(channels) {
		sh, err := s.shard(ctx, group[0])
		if err == nil {
			err = sh.ps.SSubscribe(ctx, group...)
		}
		if err != nil {
			return s.fail(fmt.Errorf("goredis: cluster: SSUBSCRIBE %q: %w", group, serverError(err, true)))
		}
		for _, ch := range group {
			s.chans[ch] = sh
		}
	}
	return nil
}

// Unsubscribe sends SUNSUBSCRIBE for the channels, grouped by slot, on the
// connection each was subscribed on; a channel not subscribed is confirmed
// at once. No channels is nothing to do (go-redis would unsubscribe from
// every channel).
func (s *shardedSub) Unsubscribe(channels ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errSubClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	for _, group := range bySlot(channels) {
		sh := s.chans[group[0]]
		if sh == nil {
			for _, ch := range group {
				s.local = append(s.local, driver.Message{Kind: driver.Unsubscribed, Channel: ch})
			}
			s.wake()
			continue
		}
		for _, ch := range group {
			s.leaves[ch]++
			delete(s.chans, ch)
		}
		if err := sh.ps.SUnsubscribe(ctx, group...); err != nil {
			return s.fail(fmt.Errorf("goredis: cluster: SUNSUBSCRIBE on %s: %w", sh.addr, serverError(err, true)))
		}
	}
	return nil
}

// shard returns the connection to the master of channel's slot, opening it
// and starting its reader if there is none. s.mu is held.
func (s *shardedSub) shard(ctx context.Context, channel string) (*shardPubSub, error) {
	t, err := s.c.route(ctx, []string{channel})
	if err != nil {
		return nil, err
	}
	if sh := s.shards[t.server]; sh != nil {
		return sh, nil
	}
	// The node client sets up a connection of its own first, as a call
	// through it would (see readiness).
	if err := t.ready.wait(ctx, t.client); err != nil {
		return nil, err
	}
	ps := t.client.SSubscribe(ctx) // connects with the first SSUBSCRIBE
	if err := ps.Ping(ctx); err != nil {
		ps.Close()
		return nil, err
	}
	sh := &shardPubSub{addr: t.server, ps: ps}
	s.shards[t.server] = sh
	s.wg.Add(1)
	go s.read(sh)
	return sh, nil
}

// fail records err for Receive, and returns it. s.mu is held.
func (s *shardedSub) fail(err error) error {
	if s.failed == nil {
		s.failed = err
		s.wake()
	}
	return err
}

// wake tells Receive that local or failed changed. s.mu is held.
func (s *shardedSub) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// read passes the shard's events to Receive until its connection fails or
// the subscription is closed.
func (s *shardedSub) read(sh *shardPubSub) {
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

// next reads the shard's next event, skipping what Receive does not report
// (the PONG of the PING that opened the connection).
func (s *shardedSub) next(sh *shardPubSub) shardEvent {
	for {
		v, err := sh.ps.Receive(context.Background())
		if err != nil {
			return shardEvent{err: fmt.Errorf("goredis: cluster: subscription on %s: %w", sh.addr, serverError(err, true))}
		}
		switch v := v.(type) {
		case *redis.Message:
			return shardEvent{msg: driver.Message{Kind: driver.Published, Channel: v.Channel}}
		case *redis.Subscription:
			switch v.Kind {
			case "ssubscribe":
				return shardEvent{msg: driver.Message{Kind: driver.Subscribed, Channel: v.Channel}}
			case "sunsubscribe":
				if !s.asked(v.Channel) {
					return shardEvent{err: fmt.Errorf("goredis: cluster: %s dropped the subscription to %q: its slot %d moved to another master", sh.addr, v.Channel, slot.Of(v.Channel))}
				}
				return shardEvent{msg: driver.Message{Kind: driver.Unsubscribed, Channel: v.Channel}}
			}
		}
	}
}

// asked reports whether an unsubscription from ch was asked and not yet
// confirmed, and counts this confirmation as its.
func (s *shardedSub) asked(ch string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaves[ch] == 0 {
		return false
	}
	if s.leaves[ch]--; s.leaves[ch] == 0 {
		delete(s.leaves, ch)
	}
	return true
}

// Receive returns the next event of any shard. It returns an error once a
// shard's connection failed, its master dropped a channel, or a write
// failed; the subscription is then closed, and later calls return an error
// too.
func (s *shardedSub) Receive() (driver.Message, error) {
	for {
		s.mu.Lock()
		if len(s.local) > 0 {
			m := s.local[0]
			s.local = s.local[1:]
			s.mu.Unlock()
			return m, nil
		}
		failed := s.failed
		s.mu.Unlock()
		if failed != nil {
			return s.end(failed)
		}
		select {
		case ev := <-s.events:
			if ev.err != nil {
				return s.end(ev.err)
			}
			return ev.msg, nil
		case <-s.kick:
		case <-s.done:
			return driver.Message{}, errSubClosed
		}
	}
}

// end closes the subscription after its failure err, and has the client
// read the slot map again: the failure may be a slot that moved.
func (s *shardedSub) end(err error) (driver.Message, error) {
	s.Close()
	s.c.client.ReloadState(context.Background()) // in the background
	return driver.Message{}, err
}

// Close closes every shard's connection and waits for their readers.
func (s *shardedSub) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	var errs []error
	for _, sh := range s.shards {
		errs = append(errs, sh.ps.Close())
	}
	s.mu.Unlock()
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
