package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// Bounds of the shard faults.
const (
	// syncLimit bounds LagReplicas' wait for the replicas to catch up.
	syncLimit = 10 * time.Second
	// promoteLimit bounds FailoverShard's wait for a promotion: the node
	// timeout, the failure reports agreed, an election delay of up to 1.5 s,
	// with room for a loaded machine.
	promoteLimit = 30 * time.Second
	// shardReadyLimit bounds FailoverShard's wait for the cluster to serve every
	// slot again.
	shardReadyLimit = 30 * time.Second
)

// startSharded starts spec.Nodes Redis Clusters at once, each of
// spec.Shards shard masters with spec.ShardReplicas replicas each. Their
// removal is registered with tb.Cleanup.
func startSharded(tb testing.TB, spec Spec) *processSharded {
	cs := redistest.StartClusters(tb, spec.Nodes, redistest.ClusterOptions{
		Shards: spec.Shards, Replicas: spec.ShardReplicas, Persistence: persistence(spec.Persistence),
	})
	return &processSharded{clusters: cs, clients: spec.Clients}
}

// processSharded is a Sharded of redis-server child processes: one Redis
// Cluster per node.
type processSharded struct {
	clusters []*redistest.Cluster
	clients  int
}

func (c *processSharded) Backend() string { return "process" }
func (c *processSharded) Size() int       { return len(c.clusters) }
func (c *processSharded) Clients() int    { return c.clients }

// Addrs returns every node's cluster URL: the same for every client, since
// there are no links.
func (c *processSharded) Addrs(client int) []string {
	if client < 0 || client >= c.clients {
		return nil
	}
	out := make([]string, len(c.clusters))
	for n := range c.clusters {
		out[n] = c.Direct(n)
	}
	return out
}

// Direct returns the node's cluster URL, with every server of the cluster
// as a seed.
func (c *processSharded) Direct(node int) string {
	if checkNode(c, node) != nil {
		return ""
	}
	return "redis+cluster://" + strings.Join(c.clusters[node].Addrs(), ",")
}

func (c *processSharded) cluster(node int) (*redistest.Cluster, error) {
	if err := checkNode(c, node); err != nil {
		return nil, err
	}
	return c.clusters[node], nil
}

func (c *processSharded) Masters(node int) ([]string, error) {
	cl, err := c.cluster(node)
	if err != nil {
		return nil, err
	}
	return cl.Masters()
}

func (c *processSharded) MasterFor(node, slot int) (string, error) {
	cl, err := c.cluster(node)
	if err != nil {
		return "", err
	}
	return cl.MasterFor(slot)
}

// shardOf returns the node's cluster, the master owning slot and its
// replicas, which must be at least one.
func (c *processSharded) shardOf(node, slot int) (*redistest.Cluster, *redistest.Server, []*redistest.Server, error) {
	cl, err := c.cluster(node)
	if err != nil {
		return nil, nil, nil, err
	}
	addr, err := cl.MasterFor(slot)
	if err != nil {
		return nil, nil, nil, err
	}
	addrs, err := cl.ReplicasOf(addr)
	if err != nil {
		return nil, nil, nil, err
	}
	var replicas []*redistest.Server
	for _, a := range addrs {
		if r := cl.Server(a); r != nil && r.PID() != 0 {
			replicas = append(replicas, r)
		}
	}
	if len(replicas) == 0 {
		return nil, nil, nil, fmt.Errorf("cluster: n%d's master %s of slot %d has no running replica (Spec.ShardReplicas)", node, addr, slot)
	}
	return cl, cl.Server(addr), replicas, nil
}

func (c *processSharded) LagReplicas(_ context.Context, node, slot int) error {
	_, master, replicas, err := c.shardOf(node, slot)
	if err != nil {
		return err
	}
	for _, r := range replicas {
		if err := redistest.WaitReplicated(master, r, syncLimit); err != nil {
			return err
		}
	}
	// The replicas reconnect at once, and would be sent what they missed:
	// the master refuses their PSYNC and SYNC first. The lock clients, on
	// the same default user, use neither.
	if _, err := master.Do("ACL", "SETUSER", "default", "-psync", "-sync"); err != nil {
		return fmt.Errorf("cluster: refusing %s's replicas: %w", master.Addr(), err)
	}
	if _, err := master.Do("CLIENT", "KILL", "TYPE", "replica"); err != nil {
		return fmt.Errorf("cluster: cutting %s's replicas off: %w", master.Addr(), err)
	}
	return nil
}

func (c *processSharded) FailoverShard(ctx context.Context, node, slot int) (string, string, error) {
	cl, master, replicas, err := c.shardOf(node, slot)
	if err != nil {
		return "", "", err
	}
	killed := master.Addr()
	candidates := make([]string, len(replicas))
	for i, r := range replicas {
		candidates[i] = r.Addr()
	}
	if err := cl.KillMaster(killed); err != nil {
		return "", "", err
	}
	promoted, err := awaitPromotion(ctx, cl, slot, candidates)
	if err != nil {
		return "", "", err
	}
	if err := cl.WaitReady(shardReadyLimit); err != nil {
		return "", "", err
	}
	return killed, promoted, nil
}

// awaitPromotion waits until the cluster gives slot to one of candidates,
// as the first running node that answers sees it, and returns it.
func awaitPromotion(ctx context.Context, cl *redistest.Cluster, slot int, candidates []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, promoteLimit)
	defer cancel()
	var last error
	for {
		a, err := cl.MasterFor(slot)
		if err == nil && slices.Contains(candidates, a) {
			return a, nil
		}
		if err == nil {
			err = fmt.Errorf("slot %d still belongs to %s", slot, a)
		}
		last = err
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("cluster: no replica of %v promoted for slot %d: %w (last: %v)", candidates, slot, ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// unsupported is the error of a fault a Sharded cannot inject.
func unsupported(op string, node int) error {
	return fmt.Errorf("cluster: %s of n%d, a Redis Cluster: %w", op, node, ErrUnsupported)
}

func (c *processSharded) Kill(_ context.Context, node int) error  { return unsupported("kill", node) }
func (c *processSharded) Stop(_ context.Context, node int) error  { return unsupported("stop", node) }
func (c *processSharded) Pause(_ context.Context, node int) error { return unsupported("pause", node) }
func (c *processSharded) Unpause(_ context.Context, node int) error {
	return unsupported("unpause", node)
}

func (c *processSharded) Start(_ context.Context, node int, _ Persistence) error {
	return unsupported("start", node)
}

func (c *processSharded) Impair(_ context.Context, l Link, _ Impairment) error {
	return unsupported("a link fault", l.Node)
}

func (c *processSharded) Heal(_ context.Context, l Link) error {
	return unsupported("a link heal", l.Node)
}

func (c *processSharded) DetachReplica(_ context.Context, node int) error {
	return unsupported("detaching a replica", node)
}

func (c *processSharded) Failover(_ context.Context, node int) error {
	return unsupported("a failover of the whole node", node)
}

func (c *processSharded) JumpClock(_ context.Context, node int, _ time.Duration) (int, error) {
	return 0, unsupported("a clock jump", node)
}
