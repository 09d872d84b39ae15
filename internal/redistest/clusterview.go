package redistest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/quorumlock/quorumlock/internal/slot"
)

// clusterNode is one line of CLUSTER NODES: how one node sees one member.
type clusterNode struct {
	id, addr string
	flags    []string
	master   string // the master's id for a replica, "" for a master
	slots    []slotRange
}

func (n clusterNode) has(flag string) bool { return slices.Contains(n.flags, flag) }

// slotRange is a run of slots [lo, hi] owned by one master.
type slotRange struct {
	lo, hi int
	addr   string
}

// clusterView is how one node sees the cluster.
type clusterView []clusterNode

// readView reads the view of the node at addr.
func readView(addr string) (clusterView, error) {
	body, err := DoAt(addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	return parseView(body)
}

// parseView parses the text of CLUSTER NODES:
//
//	<id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...
//
// where a slot is "n" or "lo-hi"; slots being migrated ("[n->-id]",
// "[n-<-id]") still belong to their owner and are left out.
func parseView(body string) (clusterView, error) {
	var v clusterView
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("redistest: CLUSTER NODES line %q: too few fields", line)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := clusterNode{id: f[0], addr: addr, flags: strings.Split(f[2], ",")}
		if f[3] != "-" {
			n.master = f[3]
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue
			}
			lo, hi, isRange := strings.Cut(s, "-")
			if !isRange {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || a < 0 || b < a || b >= slot.Count {
				return nil, fmt.Errorf("redistest: CLUSTER NODES line %q: bad slots %q", line, s)
			}
			n.slots = append(n.slots, slotRange{a, b, addr})
		}
		v = append(v, n)
	}
	return v, nil
}

// slotMap returns every owned range in slot order, neighbours of one owner
// merged, so that two views that agree on who owns what give equal maps.
func (v clusterView) slotMap() []slotRange {
	var all []slotRange
	for _, n := range v {
		if n.master == "" {
			all = append(all, n.slots...)
		}
	}
	slices.SortFunc(all, func(a, b slotRange) int { return a.lo - b.lo })
	var out []slotRange
	for _, r := range all {
		if k := len(out) - 1; k >= 0 && out[k].addr == r.addr && out[k].hi+1 == r.lo {
			out[k].hi = r.hi
			continue
		}
		out = append(out, r)
	}
	return out
}

// covers reports whether m gives every slot exactly one owner.
func covers(m []slotRange) bool {
	next := 0
	for _, r := range m {
		if r.lo != next {
			return false
		}
		next = r.hi + 1
	}
	return next == slot.Count
}

// masters returns the addresses of the masters that own slots, ordered by
// their first slot.
func (v clusterView) masters() []string {
	var out []string
	for _, r := range v.slotMap() {
		if !slices.Contains(out, r.addr) {
			out = append(out, r.addr)
		}
	}
	return out
}

// owner returns the address of the master of slot s, or "" if none owns it.
func (v clusterView) owner(s int) string {
	for _, r := range v.slotMap() {
		if r.lo <= s && s <= r.hi {
			return r.addr
		}
	}
	return ""
}

// replicasOf returns the addresses of the replicas of the master at addr.
func (v clusterView) replicasOf(addr string) []string {
	var id string
	for _, n := range v {
		if n.addr == addr {
			id = n.id
		}
	}
	var out []string
	for _, n := range v {
		if id != "" && n.master == id {
			out = append(out, n.addr)
		}
	}
	return out
}
