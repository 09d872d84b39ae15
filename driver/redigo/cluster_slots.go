package redigo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// slotMap says which master owns each hash slot, as one node answered
// CLUSTER SLOTS.
type slotMap struct {
	gen     uint64  // counts the reads, so that one read serves all who waited for it
	owner   []int16 // per slot: index in masters, or -1 for a slot none serves
	masters []string
}

// ownerOf returns the master of key's slot.
func (m *slotMap) ownerOf(key string) (string, error) {
	if o := m.owner[slot.Of(key)]; o >= 0 {
		return m.masters[o], nil
	}
	return "", driver.Error(fmt.Sprintf("CLUSTERDOWN Hash slot %d not served (redigo: no master owns it)", slot.Of(key)))
}

// current returns the slot map, read first if the driver has none or a
// call has seen a connection fail since it was read. A failed re-read keeps
// the old map.
func (c *Cluster) current(ctx context.Context) (*slotMap, error) {
	m := c.slots.Load()
	if m != nil && !c.stale.Load() {
		return m, nil
	}
	err := c.refresh(ctx, m)
	if now := c.slots.Load(); now != nil {
		return now, nil
	}
	return nil, err
}

// refresh reads the slot map again, unless another call has done so since
// seen was current. It asks the masters seen reports, then the seeds, in
// turn, and keeps the first answer.
func (c *Cluster) refresh(ctx context.Context, seen *slotMap) error {
	select {
	case c.refreshing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.refreshing }()
	now := c.slots.Load()
	if now != seen {
		return nil // refreshed while we waited
	}
	var gen uint64
	var ask []string
	if now != nil {
		gen = now.gen
		ask = append(ask, now.masters...)
	}
	for _, s := range c.seeds {
		if !slices.Contains(ask, s) {
			ask = append(ask, s)
		}
	}
	var errs []error
	for _, addr := range ask {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		m, err := c.readSlots(ctx, addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		m.gen = gen + 1
		c.slots.Store(m)
		c.stale.Store(false)
		return nil
	}
	return fmt.Errorf("redigo: cluster %s: no node gave its slot map: %w", c.name, errors.Join(errs...))
}

// readSlots asks the node at addr for CLUSTER SLOTS.
func (c *Cluster) readSlots(ctx context.Context, addr string) (*slotMap, error) {
	n, err := c.node(addr)
	if err != nil {
		return nil, err
	}
	var v any
	for try := 0; try < 2; try++ { // a connection may have died since its last call
		v, err = n.pl.Do(ctx, "CLUSTER", "SLOTS")
		if err == nil || !driver.Stale(err) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	return parseSlots(v, host)
}

// parseSlots reads a CLUSTER SLOTS reply, in the driver's neutral form: per
// range of slots, its first and last slot, then its master as [endpoint,
// port, id, ...], then replicas. An endpoint that is empty or "?" (unknown)
// is the host the reply came from.
func parseSlots(v any, host string) (*slotMap, error) {
	ranges, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("CLUSTER SLOTS: reply %v is not an array", v)
	}
	m := &slotMap{owner: make([]int16, slot.Count)}
	for i := range m.owner {
		m.owner[i] = -1
	}
	index := map[string]int16{}
	for _, r := range ranges {
		f, ok := r.([]any)
		if !ok || len(f) < 3 {
			return nil, fmt.Errorf("CLUSTER SLOTS: malformed range %v", r)
		}
		lo, ok1 := f[0].(int64)
		hi, ok2 := f[1].(int64)
		master, ok3 := f[2].([]any)
		if !ok1 || !ok2 || !ok3 || lo < 0 || hi < lo || hi >= slot.Count || len(master) < 2 {
			return nil, fmt.Errorf("CLUSTER SLOTS: malformed range %v", r)
		}
		ep, ok1 := master[0].(string)
		port, ok2 := master[1].(int64)
		if !ok1 || !ok2 || port <= 0 || port > 65535 {
			return nil, fmt.Errorf("CLUSTER SLOTS: malformed master %v", master)
		}
		if ep == "" || ep == "?" {
			ep = host
		}
		addr := net.JoinHostPort(ep, strconv.FormatInt(port, 10))
		idx, ok := index[addr]
		if !ok {
			idx = int16(len(m.masters))
			index[addr] = idx
			m.masters = append(m.masters, addr)
		}
		for s := lo; s <= hi; s++ {
			m.owner[s] = idx
		}
	}
	if len(m.masters) == 0 {
		return nil, errors.New("CLUSTER SLOTS: no master owns a slot")
	}
	return m, nil
}
