package rueidisdriver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
)

// The cluster's routing. rueidis routes a DoMulti on a cluster client by
// each command's slot, and follows a MOVED by sending the moved command
// again, alone, to another node: the guard's questions, which have no key,
// would go to any node, and the script could run on another server than
// the one that answered them. So the driver routes a call itself: it finds
// the master that owns the keys' slot in the cluster's slot map, and sends
// the questions and the script as one DoMulti through that node's own
// client (Client.Nodes). A MOVED reply means the script did not run there:
// the map is read again and the call goes, once more, to the new owner.

// slotMap is the cluster's slots and their masters, as CLUSTER SLOTS last
// told.
type slotMap struct {
	mu     sync.Mutex
	ranges []slotRange // sorted by first
	read   uint64      // how many times the map was read

	// reading serialises refresh: calls that find the map stale at once
	// read it once between them.
	reading sync.Mutex
}

type slotRange struct {
	first, last uint16
	master      string // "host:port", as rueidis names the node
}

// owner returns the master of slot, or "" if the map does not know it, and
// the map's version, for refresh.
func (s *slotMap) owner(slot uint16) (string, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.ranges), func(i int) bool { return s.ranges[i].last >= slot })
	if i < len(s.ranges) && s.ranges[i].first <= slot {
		return s.ranges[i].master, s.read
	}
	return "", s.read
}

// refresh reads the slot map again from one of the client's nodes, trying
// each until one answers, unless it was read since version seen.
func (s *slotMap) refresh(ctx context.Context, client rueidis.Client, seen uint64) error {
	s.reading.Lock()
	defer s.reading.Unlock()
	s.mu.Lock()
	fresh := s.read != seen
	s.mu.Unlock()
	if fresh {
		return nil
	}
	nodes := client.Nodes()
	addrs := make([]string, 0, len(nodes))
	for a := range nodes {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	var errs []error
	for _, a := range addrs {
		node := nodes[a]
		msg, err := node.Do(ctx, node.B().ClusterSlots().Build()).ToMessage()
		if err == nil {
			var ranges []slotRange
			if ranges, err = parseSlots(&msg, a); err == nil {
				s.mu.Lock()
				s.ranges = ranges
				s.read++
				s.mu.Unlock()
				return nil
			}
		}
		errs = append(errs, fmt.Errorf("%s: %w", a, err))
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("rueidisdriver: reading the cluster's slots: %w", errors.Join(errs...))
}

// parseSlots reads a CLUSTER SLOTS reply given by the node at from: one
// entry per range, [first, last, [host, port, id, ...], replicas...]. An
// empty host is the answering node's; "?" is a master of unknown address,
// whose slots the map leaves out.
func parseSlots(msg *rueidis.RedisMessage, from string) ([]slotRange, error) {
	entries, err := msg.ToArray()
	if err != nil {
		return nil, err
	}
	ranges := make([]slotRange, 0, len(entries))
	for _, e := range entries {
		vs, err := e.ToArray()
		if err != nil || len(vs) < 3 {
			return nil, fmt.Errorf("CLUSTER SLOTS: bad entry %v", e)
		}
		first, err1 := vs[0].AsInt64()
		last, err2 := vs[1].AsInt64()
		node, err3 := vs[2].ToArray()
		if err1 != nil || err2 != nil || err3 != nil || len(node) < 2 || first < 0 || last > 16383 || first > last {
			return nil, fmt.Errorf("CLUSTER SLOTS: bad entry %v", e)
		}
		host, _ := node[0].ToString()
		port, err := node[1].AsInt64()
		if err != nil {
			return nil, fmt.Errorf("CLUSTER SLOTS: bad port in %v", e)
		}
		switch host {
		case "?":
			continue
		case "":
			host, _, _ = net.SplitHostPort(from)
		}
		ranges = append(ranges, slotRange{first: uint16(first), last: uint16(last), master: net.JoinHostPort(host, strconv.FormatInt(port, 10))})
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].first < ranges[j].first })
	return ranges, nil
}

// keysSlot returns the slot all keys share, or an ErrInvalid error.
func keysSlot(keys []string) (uint16, error) {
	if len(keys) == 0 {
		return 0, fmt.Errorf("%w: rueidisdriver: a call to a cluster needs a key", ErrInvalid)
	}
	slot := slotOf(keys[0])
	for _, k := range keys[1:] {
		if s := slotOf(k); s != slot {
			return 0, fmt.Errorf("%w: rueidisdriver: keys %q and %q are in slots %d and %d; a cluster needs them in one", ErrInvalid, keys[0], k, slot, s)
		}
	}
	return slot, nil
}

// evalCluster runs call once on the master that owns its keys' slot,
// following a MOVED once. answered is the connection whose answers rep
// holds, if any; retry reports an error of a connection that died before
// the call.
func (m *Master) evalCluster(ctx context.Context, call driver.Call) (driver.Reply, *held, bool, error) {
	slot, err := keysSlot(call.Keys)
	if err != nil {
		return driver.Reply{}, nil, false, err
	}
	var (
		rep      driver.Reply
		answered *held
		retry    bool
	)
	for hop := 0; hop < 2; hop++ {
		server, version := m.slots.owner(slot)
		if server == "" {
			if err := m.slots.refresh(ctx, m.client, version); err != nil {
				return driver.Reply{}, nil, false, err
			}
			if server, version = m.slots.owner(slot); server == "" {
				return driver.Reply{}, nil, false, fmt.Errorf("rueidisdriver: no master serves slot %d", slot)
			}
		}
		rep, answered, retry, err = m.onNode(ctx, m.node(server), m.lines.of(server), server, call)
		var de driver.Error
		if err != nil && !errors.As(err, &de) {
			// The master may be gone, and its slots served by another
			// after a failover: read the map again next time.
			m.slots.forget(version)
		}
		if de.Code() != "MOVED" {
			return rep, answered, retry, err
		}
		// The script did not run: the slot has another master now. Its
		// answers are not handed over, and leave the old master's
		// connection fresh.
		rep.Answers, answered = nil, nil
		if err := m.slots.refresh(ctx, m.client, version); err != nil {
			return rep, nil, false, err
		}
	}
	return rep, answered, retry, err
}

// forget empties the map, to be read again, unless it was read since
// version seen.
func (s *slotMap) forget(seen uint64) {
	s.mu.Lock()
	if s.read == seen {
		s.ranges = nil
	}
	s.mu.Unlock()
}

// node returns a function that returns the client of server's node, for
// taking its line's connection.
func (m *Master) node(server string) func() (rueidis.Client, error) {
	return func() (rueidis.Client, error) {
		node, ok := m.client.Nodes()[server]
		if !ok {
			return nil, fmt.Errorf("rueidisdriver: master %s is not among the client's nodes", server)
		}
		return node, nil
	}
}
