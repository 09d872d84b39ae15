package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// Subscribe returns a subscription over sharded pub/sub (SSUBSCRIBE): see
// driver.Master. It reads the slot map within ctx if the driver has none;
// the connections, one per shard master, are opened as channels of the
// master's slots are subscribed.
//
// Receive returns an error, after which the subscription is done with, when
// a shard's connection fails or its master drops a channel by itself (it
// sends SUNSUBSCRIBE when the channel's slot moves to another master, as in
// a failover or a resharding): the caller subscribes again, on a new
// subscription, which the slot map then routes to the new owners.
func (c *Cluster) Subscribe(ctx context.Context) (driver.Subscription, error) {
	if _, err := c.current(ctx); err != nil {
		return nil, err
	}
	return &clusterSub{
		c:      c,
		shards: map[string]*shardConn{},
		chans:  map[string]string{},
		leaves: map[string]int{},
		events: make(chan subEvent, 64),
		kick:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}, nil
}

// clusterSub multiplexes one SSUBSCRIBE connection per shard master.
type clusterSub struct {
	c *Cluster

	mu     sync.Mutex
	shards map[string]*shardConn // by master address
	chans  map[string]string     // channel -> the master it was subscribed on
	leaves map[string]int        // per channel, unsubscriptions asked and not yet confirmed
	local  []driver.Message      // confirmations given without a server
	closed bool

	events chan subEvent // from the shards' readers
	kick   chan struct{} // local has grown
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup
}

// shardConn is the pub/sub connection to one shard master.
type shardConn struct {
	addr string
	conn redis.Conn
}

type subEvent struct {
	msg driver.Message
	err error
}

// Subscribe groups the channels by hash slot and sends one SSUBSCRIBE per
// slot (Redis takes only channels of one slot in one SSUBSCRIBE) on the
// connection to the slot's master, opened if need be, within the cluster's
// dial timeout.
func (s *clusterSub) Subscribe(channels ...string) error {
	if len(channels) == 0 {
		return nil
	}
	m := s.c.slots.Load()
	if m == nil {
		return errors.New("pool: cluster: no slot map")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClusterClosed
	}
	for _, group := range bySlot(channels) {
		addr, err := m.ownerOf(group[0])
		if err != nil {
			return err
		}
		sc, err := s.shard(addr)
		if err != nil {
			return err
		}
		if err := send(sc.conn, "SSUBSCRIBE", group); err != nil {
			return fmt.Errorf("pool: cluster: SSUBSCRIBE on %s: %w", addr, err)
		}
		for _, ch := range group {
			s.chans[ch] = addr
		}
	}
	return nil
}

// Unsubscribe sends SUNSUBSCRIBE for each channel, grouped by slot, to the
// master it was subscribed on; a channel never subscribed is confirmed at
// once.
func (s *clusterSub) Unsubscribe(channels ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClusterClosed
	}
	for _, group := range bySlot(channels) {
		addr, ok := s.chans[group[0]]
		sc := s.shards[addr]
		if !ok || sc == nil {
			for _, ch := range group {
				s.local = append(s.local, driver.Message{Kind: driver.Unsubscribed, Channel: ch})
			}
			select {
			case s.kick <- struct{}{}:
			default:
			}
			continue
		}
		for _, ch := range group {
			s.leaves[ch]++
			delete(s.chans, ch)
		}
		if err := send(sc.conn, "SUNSUBSCRIBE", group); err != nil {
			return fmt.Errorf("pool: cluster: SUNSUBSCRIBE on %s: %w", addr, err)
		}
	}
	return nil
}

// shard returns the connection to the master at addr, dialling it and
// starting its reader if there is none. s.mu is held.
func (s *clusterSub) shard(addr string) (*shardConn, error) {
	if sc := s.shards[addr]; sc != nil {
		return sc, nil
	}
	n, err := s.c.node(addr)
	if err != nil {
		return nil, err
	}
	conn, err := n.Dial(context.Background()) // bounded by the dial timeout
	if err != nil {
		return nil, fmt.Errorf("pool: cluster: subscribing on %s: %w", addr, err)
	}
	sc := &shardConn{addr: addr, conn: conn}
	s.shards[addr] = sc
	s.wg.Add(1)
	go s.read(sc)
	return sc, nil
}

// read passes the shard's events to Receive until its connection fails or
// is closed.
func (s *clusterSub) read(sc *shardConn) {
	defer s.wg.Done()
	for {
		ev := s.next(sc)
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

// next reads the shard's next event, skipping what Receive does not report.
func (s *clusterSub) next(sc *shardConn) subEvent {
	for {
		v, err := redis.Values(redis.ReceiveWithTimeout(sc.conn, 0))
		if err != nil {
			return subEvent{err: fmt.Errorf("pool: cluster: subscription on %s: %w", sc.addr, serverError(err))}
		}
		if len(v) < 2 {
			continue
		}
		kind, _ := redis.String(v[0], nil)
		ch, _ := redis.String(v[1], nil)
		switch kind {
		case "smessage":
			return subEvent{msg: driver.Message{Kind: driver.Published, Channel: ch}}
		case "ssubscribe":
			return subEvent{msg: driver.Message{Kind: driver.Subscribed, Channel: ch}}
		case "sunsubscribe":
			s.mu.Lock()
			asked := s.leaves[ch] > 0
			if asked {
				if s.leaves[ch]--; s.leaves[ch] == 0 {
					delete(s.leaves, ch)
				}
			}
			s.mu.Unlock()
			if !asked {
				return subEvent{err: fmt.Errorf("pool: cluster: %s dropped the subscription to %q: its slot %d moved to another master", sc.addr, ch, slot.Of(ch))}
			}
			return subEvent{msg: driver.Message{Kind: driver.Unsubscribed, Channel: ch}}
		}
	}
}

// Receive returns the next event of any shard. It returns an error once a
// shard's connection failed or its master dropped a channel (see
// Cluster.Subscribe), and once the subscription is closed.
func (s *clusterSub) Receive() (driver.Message, error) {
	for {
		s.mu.Lock()
		if len(s.local) > 0 {
			m := s.local[0]
			s.local = s.local[1:]
			s.mu.Unlock()
			return m, nil
		}
		s.mu.Unlock()
		select {
		case ev := <-s.events:
			if ev.err != nil {
				s.c.stale.Store(true) // the next subscription reads the map first
			}
			return ev.msg, ev.err
		case <-s.kick:
		case <-s.done:
			return driver.Message{}, errClusterClosed
		}
	}
}

// Close closes every shard's connection and waits for their readers.
func (s *clusterSub) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	var errs []error
	for _, sc := range s.shards {
		errs = append(errs, sc.conn.Close())
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

// send writes one command with the channels as arguments.
func send(conn redis.Conn, cmd string, channels []string) error {
	args := make([]any, len(channels))
	for i, ch := range channels {
		args[i] = ch
	}
	if err := conn.Send(cmd, args...); err != nil {
		return err
	}
	return conn.Flush()
}
