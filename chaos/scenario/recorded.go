package scenario

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/chaos/cluster"
	"github.com/quorumlock/quorumlock/chaos/history"
)

// recorded is a Cluster that draws each fault it injects into the history:
// a band from the moment the fault began to the moment it healed.
type recorded struct {
	cluster.Cluster
	h *history.History

	mu     sync.Mutex
	down   map[int]int               // node -> open fault: killed, stopped
	paused map[int]int               // node -> open fault: paused
	links  map[cluster.Link][]int    // link -> open faults
	imps   map[cluster.Link]struct{} // links with impairments, for healAll
}

func record(c cluster.Cluster, h *history.History) *recorded {
	return &recorded{
		Cluster: c, h: h,
		down: map[int]int{}, paused: map[int]int{},
		links: map[cluster.Link][]int{}, imps: map[cluster.Link]struct{}{},
	}
}

// begin records the start of a fault and runs op; if op fails the fault is
// closed at once.
func (r *recorded) begin(node, client int, kind, label string, op func() error) (int, error) {
	id := r.h.FaultStart(node, client, kind, label)
	if err := op(); err != nil {
		r.h.FaultEnd(id)
		return -1, err
	}
	return id, nil
}

func (r *recorded) Kill(ctx context.Context, node int) error {
	id, err := r.begin(node, history.AllClients, "killed", fmt.Sprintf("n%d killed", node), func() error { return r.Cluster.Kill(ctx, node) })
	if err == nil {
		r.mu.Lock()
		r.down[node] = id
		r.mu.Unlock()
	}
	return err
}

func (r *recorded) Stop(ctx context.Context, node int) error {
	id, err := r.begin(node, history.AllClients, "stopped", fmt.Sprintf("n%d stopped", node), func() error { return r.Cluster.Stop(ctx, node) })
	if err == nil {
		r.mu.Lock()
		r.down[node] = id
		r.mu.Unlock()
	}
	return err
}

func (r *recorded) Start(ctx context.Context, node int, p cluster.Persistence) error {
	if err := r.Cluster.Start(ctx, node, p); err != nil {
		return err
	}
	r.mu.Lock()
	id, ok := r.down[node]
	delete(r.down, node)
	r.mu.Unlock()
	if ok {
		r.h.FaultEnd(id)
	}
	r.h.Instant(node, "restarted", fmt.Sprintf("n%d up (%v)", node, p))
	return nil
}

func (r *recorded) Pause(ctx context.Context, node int) error {
	id, err := r.begin(node, history.AllClients, "paused", fmt.Sprintf("n%d SIGSTOP", node), func() error { return r.Cluster.Pause(ctx, node) })
	if err == nil {
		r.mu.Lock()
		r.paused[node] = id
		r.mu.Unlock()
	}
	return err
}

func (r *recorded) Unpause(ctx context.Context, node int) error {
	if err := r.Cluster.Unpause(ctx, node); err != nil {
		return err
	}
	r.mu.Lock()
	id, ok := r.paused[node]
	delete(r.paused, node)
	r.mu.Unlock()
	if ok {
		r.h.FaultEnd(id)
	}
	return nil
}

func (r *recorded) Impair(ctx context.Context, l cluster.Link, imp cluster.Impairment) error {
	label := fmt.Sprintf("n%d %v", l.Node, imp)
	if l.Client != cluster.AllClients {
		label = fmt.Sprintf("c%d-n%d %v", l.Client, l.Node, imp)
	}
	id, err := r.begin(l.Node, l.Client, imp.Kind.String(), label, func() error { return r.Cluster.Impair(ctx, l, imp) })
	if err == nil {
		r.mu.Lock()
		r.links[l] = append(r.links[l], id)
		r.imps[l] = struct{}{}
		r.mu.Unlock()
	}
	return err
}

func (r *recorded) Heal(ctx context.Context, l cluster.Link) error {
	if err := r.Cluster.Heal(ctx, l); err != nil {
		return err
	}
	r.mu.Lock()
	var ids []int
	for k, open := range r.links {
		if k == l || (l.Client == cluster.AllClients && k.Node == l.Node) {
			ids = append(ids, open...)
			delete(r.links, k)
			delete(r.imps, k)
		}
	}
	r.mu.Unlock()
	for _, id := range ids {
		r.h.FaultEnd(id)
	}
	return nil
}

func (r *recorded) JumpClock(ctx context.Context, node int, d time.Duration) (int, error) {
	n, err := r.Cluster.JumpClock(ctx, node, d)
	if err == nil {
		r.h.Instant(node, "clock jump", fmt.Sprintf("n%d clock +%v", node, d))
	}
	return n, err
}

func (r *recorded) DetachReplica(ctx context.Context, node int) error {
	if err := r.Cluster.DetachReplica(ctx, node); err != nil {
		return err
	}
	r.h.Instant(node, "replica detached", fmt.Sprintf("n%d's replica detached", node))
	return nil
}

// Failover records the move as an instant: the old master is gone for good,
// and the node lives on in its replica.
func (r *recorded) Failover(ctx context.Context, node int) error {
	if err := r.Cluster.Failover(ctx, node); err != nil {
		return err
	}
	r.h.Instant(node, "failover", fmt.Sprintf("n%d failed over to its replica", node))
	return nil
}

// healAll removes every impairment still in place and resumes every paused
// master. Masters left down stay down: that may be the point.
func (r *recorded) healAll(ctx context.Context) error {
	r.mu.Lock()
	var ls []cluster.Link
	for l := range r.imps {
		ls = append(ls, l)
	}
	var ps []int
	for n := range r.paused {
		ps = append(ps, n)
	}
	r.mu.Unlock()
	for _, l := range ls {
		if err := r.Heal(ctx, l); err != nil {
			return err
		}
	}
	for _, n := range ps {
		if err := r.Unpause(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// recordedSharded is a recorded Sharded: its shard faults are drawn into
// the history too.
type recordedSharded struct {
	*recorded
	s cluster.Sharded

	mu      sync.Mutex
	lagging map[[2]int]int // node, slot -> open fault: replicas cut off
}

// recordSharded wraps r when its cluster's nodes are Redis Clusters, and
// returns r as it is otherwise.
func recordSharded(r *recorded) cluster.Cluster {
	s, ok := r.Cluster.(cluster.Sharded)
	if !ok {
		return r
	}
	return &recordedSharded{recorded: r, s: s, lagging: map[[2]int]int{}}
}

func (r *recordedSharded) Masters(node int) ([]string, error) { return r.s.Masters(node) }

func (r *recordedSharded) MasterFor(node, slot int) (string, error) {
	return r.s.MasterFor(node, slot)
}

// LagReplicas draws a band on the node from now until the shard fails over.
func (r *recordedSharded) LagReplicas(ctx context.Context, node, slot int) error {
	id, err := r.begin(node, history.AllClients, "replica lags", fmt.Sprintf("n%d: slot %d's replicas cut off", node, slot),
		func() error { return r.s.LagReplicas(ctx, node, slot) })
	if err == nil {
		r.mu.Lock()
		r.lagging[[2]int{node, slot}] = id
		r.mu.Unlock()
	}
	return err
}

// FailoverShard draws the time from the kill to the promotion as a band on
// the node, and the promotion as an instant.
func (r *recordedSharded) FailoverShard(ctx context.Context, node, slot int) (string, string, error) {
	id := r.h.FaultStart(node, history.AllClients, "shard killed", fmt.Sprintf("n%d: slot %d's master killed", node, slot))
	killed, promoted, err := r.s.FailoverShard(ctx, node, slot)
	r.h.FaultEnd(id)
	r.mu.Lock()
	lag, ok := r.lagging[[2]int{node, slot}]
	delete(r.lagging, [2]int{node, slot})
	r.mu.Unlock()
	if ok {
		r.h.FaultEnd(lag)
	}
	if err != nil {
		return "", "", err
	}
	r.h.Instant(node, "failover", fmt.Sprintf("n%d: slot %d failed over to a replica", node, slot))
	return killed, promoted, nil
}
