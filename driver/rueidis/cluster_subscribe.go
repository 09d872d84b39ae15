package rueidisdriver

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
)

// subscribeSharded returns a cluster client's subscription: sharded pub/sub
// (SSUBSCRIBE), one dedicated connection per shard master, opened as
// channels of its slots are subscribed. The cluster's slot map is read
// within ctx if the driver has none.
func (m *Master) subscribeSharded(ctx context.Context) (driver.Subscription, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.timeout)
		defer cancel()
	}
	if server, version := m.slots.owner(0); server == "" {
		if err := m.slots.refresh(ctx, m.client, version); err != nil {
			return nil, err
		}
	}
	return &shardedSub{
		m:      m,
		shards: map[string]*shardConn{},
		chans:  map[string]*shardConn{},
		leaves: map[string]int{},
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}, nil
}

// shardedSub multiplexes one SSUBSCRIBE connection per shard master.
//
// It ends, for good, with the first failure of any of its connections, or
// when a master drops a channel by itself: Redis sends SUNSUBSCRIBE for
// every channel of a slot that moves to another master (a failover, a
// resharding). The lock then subscribes again, on a new subscription, which
// the slot map, read again, routes to the new owners.
//
// rueidis calls the hooks on the goroutine that reads the connection, and a
// Do on the connection returns only once that goroutine has read its reply:
// so the hooks take only qmu, which is never held across a Do, while
// Subscribe and Unsubscribe hold mu across theirs.
type shardedSub struct {
	m *Master

	mu     sync.Mutex            // serialises Subscribe and Unsubscribe; guards shards and chans
	shards map[string]*shardConn // by master address
	chans  map[string]*shardConn // channel → the shard it was subscribed on

	qmu    sync.Mutex
	queue  []shardEvent   // events for Receive
	leaves map[string]int // per channel, unsubscriptions asked and not yet confirmed
	closed bool

	wake chan struct{} // a token when queue is not empty
	done chan struct{} // closed by Close
	wg   sync.WaitGroup
}

// shardConn is the dedicated pub/sub connection to one shard master.
type shardConn struct {
	addr string
	dc   rueidis.DedicatedClient
}

type shardEvent struct {
	msg driver.Message
	err error // the subscription ends with it
}

// Subscribe groups the channels by hash slot (Redis takes channels of one
// slot only in one SSUBSCRIBE) and sends one SSUBSCRIBE per slot to the
// slot's master, as the slot map has it, on that master's connection,
// opened if need be. Each write is bounded by WithTimeout; rueidis returns
// once the master confirmed the first channel of the group, and the
// confirmations come through Receive.
//
// An error, such as a MOVED from a master that no longer owns the slot, is
// also reported by Receive, which then ends the subscription, so that a
// caller who only watches Receive subscribes again.
func (s *shardedSub) Subscribe(channels ...string) error {
	if len(channels) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isClosed() {
		return errClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.m.timeout)
	defer cancel()
	for _, group := range bySlot(channels) {
		sc, err := s.shard(ctx, slotOf(group[0]))
		if err == nil {
			err = sc.dc.Do(ctx, sc.dc.B().Ssubscribe().Channel(group...).Build()).Error()
			if err != nil {
				err = fmt.Errorf("on %s: %w", sc.addr, err)
			}
		}
		if err != nil {
			return s.fail(fmt.Errorf("rueidisdriver: cluster: SSUBSCRIBE %q: %w", group, err))
		}
		for _, ch := range group {
			s.chans[ch] = sc
		}
	}
	return nil
}

// Unsubscribe sends SUNSUBSCRIBE for the channels, grouped by slot, on the
// connection each was subscribed on; a channel not subscribed is confirmed
// at once.
func (s *shardedSub) Unsubscribe(channels ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isClosed() {
		return errClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.m.timeout)
	defer cancel()
	for _, group := range bySlot(channels) {
		sc := s.chans[group[0]]
		s.qmu.Lock()
		for _, ch := range group {
			if sc == nil {
				s.queue = append(s.queue, shardEvent{msg: driver.Message{Kind: driver.Unsubscribed, Channel: ch}})
			} else {
				s.leaves[ch]++
				delete(s.chans, ch)
			}
		}
		s.qmu.Unlock()
		if sc == nil {
			s.signal()
			continue
		}
		if err := sc.dc.Do(ctx, sc.dc.B().Sunsubscribe().Channel(group...).Build()).Error(); err != nil {
			return s.fail(fmt.Errorf("rueidisdriver: cluster: SUNSUBSCRIBE on %s: %w", sc.addr, err))
		}
	}
	return nil
}

// shard returns the connection to the master of slot, opening it if there
// is none. s.mu is held.
func (s *shardedSub) shard(ctx context.Context, slot uint16) (*shardConn, error) {
	m := s.m
	addr, version := m.slots.owner(slot)
	if addr == "" {
		if err := m.slots.refresh(ctx, m.client, version); err != nil {
			return nil, err
		}
		if addr, _ = m.slots.owner(slot); addr == "" {
			return nil, fmt.Errorf("no master serves slot %d", slot)
		}
	}
	if sc := s.shards[addr]; sc != nil {
		return sc, nil
	}
	node, ok := m.client.Nodes()[addr]
	if !ok {
		return nil, fmt.Errorf("slot %d's master %s is not among the client's nodes", slot, addr)
	}
	dc, err := dedicatePubSub(ctx, node)
	if err != nil {
		return nil, fmt.Errorf("subscribing on %s: %w", addr, err)
	}
	sc := &shardConn{addr: addr, dc: dc}
	ended := dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(msg rueidis.PubSubMessage) {
			s.push(shardEvent{msg: driver.Message{Kind: driver.Published, Channel: msg.Channel}})
		},
		OnSubscription: func(sub rueidis.PubSubSubscription) { s.confirmed(sc, sub) },
	})
	// The connection is dialled by now; make sure it answers.
	if err := dc.Do(ctx, dc.B().Ping().Build()).Error(); err != nil {
		dc.Close()
		return nil, fmt.Errorf("subscribing on %s: %w", addr, err)
	}
	s.shards[addr] = sc
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := <-ended // closed, with or without an error, when the connection is
		if err == nil {
			err = errClosed
		}
		s.push(shardEvent{err: fmt.Errorf("rueidisdriver: cluster: subscription on %s: %w", addr, err)})
	}()
	return sc, nil
}

// confirmed turns a confirmation of sc's master into an event. A
// SUNSUBSCRIBE nobody asked for is the master dropping the channel, as its
// slot moved: the subscription ends.
func (s *shardedSub) confirmed(sc *shardConn, sub rueidis.PubSubSubscription) {
	switch sub.Kind {
	case "ssubscribe":
		s.push(shardEvent{msg: driver.Message{Kind: driver.Subscribed, Channel: sub.Channel}})
	case "sunsubscribe":
		s.qmu.Lock()
		asked := s.leaves[sub.Channel] > 0
		if asked {
			if s.leaves[sub.Channel]--; s.leaves[sub.Channel] == 0 {
				delete(s.leaves, sub.Channel)
			}
		}
		s.qmu.Unlock()
		if !asked {
			s.push(shardEvent{err: fmt.Errorf("rueidisdriver: cluster: %s dropped the subscription to %q: its slot %d moved to another master", sc.addr, sub.Channel, slotOf(sub.Channel))})
			return
		}
		s.push(shardEvent{msg: driver.Message{Kind: driver.Unsubscribed, Channel: sub.Channel}})
	}
}

// push queues ev for Receive, unless the subscription is closed. It never
// blocks: it runs on rueidis' reading goroutine.
func (s *shardedSub) push(ev shardEvent) {
	s.qmu.Lock()
	if !s.closed {
		s.queue = append(s.queue, ev)
	}
	s.qmu.Unlock()
	s.signal()
}

// fail queues err for Receive, which ends the subscription with it, and
// returns it.
func (s *shardedSub) fail(err error) error {
	s.push(shardEvent{err: err})
	return err
}

func (s *shardedSub) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *shardedSub) isClosed() bool {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return s.closed
}

// Receive returns the next event of any shard. It returns an error once a
// shard's connection ended, its master dropped a channel, or a write
// failed; the subscription is then closed, the slot map is read again
// before the next use, and later calls return an error too.
func (s *shardedSub) Receive() (driver.Message, error) {
	for {
		s.qmu.Lock()
		if len(s.queue) > 0 {
			ev := s.queue[0]
			s.queue = s.queue[1:]
			s.qmu.Unlock()
			if ev.err != nil {
				s.Close()
				_, version := s.m.slots.owner(0)
				s.m.slots.forget(version)
				return driver.Message{}, ev.err
			}
			return ev.msg, nil
		}
		closed := s.closed
		s.qmu.Unlock()
		if closed {
			return driver.Message{}, errClosed
		}
		select {
		case <-s.wake:
		case <-s.done:
		}
	}
}

// Close closes every shard's connection and waits until their hooks are
// called no more.
func (s *shardedSub) Close() error {
	s.qmu.Lock()
	if s.closed {
		s.qmu.Unlock()
		return nil
	}
	s.closed = true
	s.queue = nil
	close(s.done)
	s.qmu.Unlock()
	// A Subscribe under way (bounded by WithTimeout) adds no shard once it
	// sees the subscription closed.
	s.mu.Lock()
	shards := s.shards
	s.shards = map[string]*shardConn{}
	s.mu.Unlock()
	for _, sc := range shards {
		sc.dc.Close()
	}
	s.wg.Wait()
	return nil
}

// bySlot groups channels by hash slot, keeping their order.
func bySlot(channels []string) [][]string {
	var groups [][]string
	at := map[uint16]int{}
	for _, ch := range channels {
		sl := slotOf(ch)
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
