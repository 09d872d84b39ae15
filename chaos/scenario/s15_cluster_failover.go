package scenario

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/chaos/cluster"
	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// clusterSlots returns the hash slots of scenario 15's keys: one in each
// third of the slots, which redis-cli --cluster create gives to the three
// shard masters in turn. The first key's shard is the one that fails over.
func clusterSlots() []int { return []int{100, 6000, 12000} }

// clusterFailovers are scenario 15 and its negative control: the lock's
// three nodes are Redis Clusters of three shards, each shard master with a
// replica, and the shard master owning a contended key's slot fails over
// to a replica that lacks the key, first in n0, then in n1, while a holder
// of that key is frozen.
//
// The clients contend for three keys, one per shard. The replicas of the
// first key's shard in n0 and n1 are cut off their master's replication
// stream (they miss what it writes from then on, as replicas behind in
// asynchronous replication do) while no one holds that key; then a holder of the key is frozen while it
// holds it, and its shard master is killed in n0, and once its replica is
// promoted, in n1. Both promoted replicas lack the frozen holder's key, so
// two of the three nodes would grant the key again: a client that trusted
// them would take it while the frozen holder still has it.
//
// With the restart guard off that is what happens: the negative control
// that shows C1 can fail here. With the guard on (the default), the
// clients keep health per shard master, see the slot answered by a master
// promoted from a replica, and keep that shard of n0 and of n1 out of the
// quorum for the guard window, while the keys of the other shards lock as
// before. The frozen holder stays frozen until another client has the key,
// then writes late, and the fenced store refuses it.
func clusterFailovers() []*Scenario {
	return []*Scenario{
		clusterFailover("15a", "cluster-failover-guard-off", false,
			"3 Redis Clusters of 3 shards with replicas; the shard master of a held key fails over to a replica that lacks it in n0, then in n1; guard off: the negative control",
			"C1 MUST find the double holder, on the failed-over key only"),
		clusterFailover("15b", "cluster-failover-guard-on", true,
			"3 Redis Clusters of 3 shards with replicas; the shard master of a held key fails over to a replica that lacks it in n0, then in n1; guard on (the default)",
			"C1 and C3 clean: the promoted shards do not vote for the guard window while the other shards' keys lock on; the store refuses the frozen holder's late write"),
	}
}

// clusterKeys returns scenario id's keys, one in each of clusterSlots.
func clusterKeys(id string) []string {
	slots := clusterSlots()
	keys := make([]string, len(slots))
	for i, s := range slots {
		tag, _ := slot.TagFor(s) // clusterSlots are valid slots
		keys[i] = fmt.Sprintf("chaos-%s-%d{%s}", id, i, tag)
	}
	return keys
}

func clusterFailover(id, name string, guard bool, shows, expected string) *Scenario {
	s := &Scenario{
		ID: id, Name: name, Shows: shows, Expected: expected,
		Nodes: 3, Clients: 4, Shards: 3, ShardReplicas: 1,
		Keys: clusterKeys(id),
		// The frozen holder's validity must outlast two failovers, each the
		// cluster's node timeout (1 s), the failure agreed and an election,
		// and the next holder's grant: the first runs took 2-3 s each.
		TTL: 10 * time.Second, Run: 4 * time.Second,
		Guard: guard, WarmUp: guard,
		Setup: shardsApart,
	}
	failed := s.Keys[0]
	victim := clusterSlots()[0]
	s.Inject = func(ctx context.Context, e *Env) error {
		sh, ok := e.Cluster.(cluster.Sharded)
		if !ok {
			return errors.New("the nodes are not Redis Clusters")
		}
		if err := e.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
		// Cut the replicas off while no one holds the key, so that they
		// lack every grant of it from then on and hold no key of an earlier
		// holder whose release they would miss.
		err := func() error {
			defer e.Workload.Resume()
			if err := e.Workload.HoldOff(ctx); err != nil {
				return err
			}
			for n := range 2 {
				if err := awaitFree(ctx, sh, n, victim, failed); err != nil {
					return err
				}
				if err := sh.LagReplicas(ctx, n, victim); err != nil {
					return err
				}
			}
			return nil
		}()
		if err != nil {
			return err
		}
		lagged := e.Mark("replicas cut off")
		c, err := e.Gate.Catch(ctx, func(h history.Hold) bool {
			return h.Key == failed && h.Acquired > lagged && h.Until-e.History.Now() >= s.TTL*3/4
		})
		if err != nil {
			return fmt.Errorf("no holder of %s to freeze: %w", failed, err)
		}
		defer c.Resume()
		until := c.Hold.Until
		e.Notef("client %d frozen while it holds %s with fence %d; the replicas of its shard in n0 and n1 lack it", c.Hold.Client, failed, c.Hold.Fence)
		for n := range 2 {
			killed, promoted, err := sh.FailoverShard(ctx, n, victim)
			if err != nil {
				return err
			}
			e.Mark(fmt.Sprintf("n%d failed over", n))
			e.Notef("n%d: the shard master %s of slot %d killed, its replica %s promoted", n, killed, victim, promoted)
			if holder, err := tokenOn(ctx, promoted, failed); err == nil && holder == c.Hold.Token {
				e.Failf("n%d's promoted replica holds the frozen holder's token: it did not lag", n)
			}
		}
		moved := e.Mark("failed over")
		others := func(r *history.Record) bool {
			for _, h := range r.Holds {
				if h.Key == failed && h.Acquired > moved && h.Client != c.Hold.Client {
					return true
				}
			}
			return false
		}
		if guard {
			// The holder stays frozen, past its validity, until another
			// client has the key, which it gets once the guard window has
			// passed, and has written: then it writes late, with its old
			// fence, which the store must refuse.
			rctx, cancel := context.WithTimeout(ctx, 2*s.TTL+5*time.Second)
			defer cancel()
			if err := e.History.Await(rctx, others); err != nil {
				e.Failf("%s was never granted again after the failovers (%v)", failed, err)
				return nil
			}
			e.Mark("rejoined")
			e.Sleep(ctx, 200*time.Millisecond)
			c.Resume()
			e.Mark("frozen holder resumed")
			return nil
		}
		// Does another client get the key while the holder is frozen?
		wctx, cancel := e.Deadline(ctx, until-300*time.Millisecond)
		err = e.History.Await(wctx, others)
		cancel()
		if err == nil {
			e.Notef("another client got %s while client %d was frozen holding it", failed, c.Hold.Client)
			e.Sleep(ctx, min(400*time.Millisecond, until-300*time.Millisecond-e.History.Now()))
		} else {
			e.Notef("no other client got %s while client %d was frozen holding it", failed, c.Hold.Client)
		}
		return nil
	}
	s.Expect = func(r *Result) []string {
		var off []string
		for _, v := range r.C1 {
			if v.Key != failed {
				off = append(off, fmt.Sprintf("C1: %s, a key of a shard that did not fail over, had two holders: clients %d and %d", v.Key, v.First.Client, v.Second.Client))
			}
		}
		if !guard {
			return join(want(len(r.C1) > 0, "negative control: C1 found no double holder, so it cannot be shown to fail"), off)
		}
		var late []string
		for _, h := range caught(r) {
			for _, w := range writesOf(r, h.ID) {
				late = append(late, want(!w.Accepted, "C3: the store accepted the frozen holder's late write with fence %d", w.Fence)...)
			}
		}
		// While the failed-over shards are out, the other shards' keys lock.
		var spared []string
		if ts, p := marks(r, "n0 failed over", "rejoined"); p != nil {
			spared = p
		} else {
			n := 0
			for _, h := range r.Record.Holds {
				if h.Key != failed && h.Acquired >= ts[0] && h.Acquired < ts[1] {
					n++
				}
			}
			spared = want(n >= 3, "only %d locks of the other shards' keys while the failed-over shards were out; want at least 3", n)
		}
		return join(safe(r), off, late, spared)
	}
	return s
}

// shardsApart checks that the keys' slots have a master each, three
// different ones, in every node: the shards that do not fail over are
// others than the one that does.
func shardsApart(_ context.Context, e *Env) error {
	sh, ok := e.Cluster.(cluster.Sharded)
	if !ok {
		return errors.New("the nodes are not Redis Clusters")
	}
	for n := range sh.Size() {
		seen := map[string]int{}
		for _, s := range clusterSlots() {
			m, err := sh.MasterFor(n, s)
			if err != nil {
				return err
			}
			if other, ok := seen[m]; ok {
				return fmt.Errorf("n%d: slots %d and %d share the master %s", n, other, s, m)
			}
			seen[m] = s
		}
	}
	return nil
}

// awaitFree waits until key is gone from the node's shard master that owns
// slot: no holder has it, and no failed attempt's roll-back is still on its
// way there.
func awaitFree(ctx context.Context, sh cluster.Sharded, node, slot int, key string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		m, err := sh.MasterFor(node, slot)
		if err == nil {
			_, err = tokenOn(ctx, m, key)
			if errors.Is(err, redis.ErrNil) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s still set on n%d (%v): %w", key, node, err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
