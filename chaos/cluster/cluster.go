package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Cluster is N independent Redis masters and the links through which each
// client reaches them. Node and client indices start at 0. Methods are safe
// for concurrent use.
type Cluster interface {
	// Backend names the backend: "docker" or "process".
	Backend() string
	// Size returns the number of masters.
	Size() int
	// Clients returns the number of clients that have their own links.
	Clients() int
	// Addrs returns the addresses through which client reaches every master,
	// in node order. Faults set with Impair apply to these addresses.
	Addrs(client int) []string
	// Direct returns a master's own address, past every link fault. The
	// checkers use it; the lock clients must not.
	Direct(node int) string

	// Kill sends SIGKILL to a master and waits until it is gone.
	Kill(ctx context.Context, node int) error
	// Stop sends SIGTERM to a master (a clean shutdown) and waits until it
	// is gone.
	Stop(ctx context.Context, node int) error
	// Pause sends SIGSTOP: the master keeps its sockets but answers nothing.
	Pause(ctx context.Context, node int) error
	// Unpause sends SIGCONT to a paused master.
	Unpause(ctx context.Context, node int) error
	// Start starts a killed or stopped master again on the same address and
	// waits until it answers. With Ephemeral it comes back empty; with
	// FsyncAlways it reloads what it had logged.
	Start(ctx context.Context, node int, p Persistence) error

	// Impair adds an impairment to a link: one client's path to one master,
	// or every client's path to it when l.Client is AllClients.
	Impair(ctx context.Context, l Link, imp Impairment) error
	// Heal removes every impairment from a link.
	Heal(ctx context.Context, l Link) error

	// DetachReplica promotes a node's replica to a master of its own
	// (REPLICAOF NO ONE) while the clients still reach the node: from then
	// on the replica lacks every write made on the node. The node must have
	// a replica (Spec.Replicas).
	DetachReplica(ctx context.Context, node int) error
	// Failover moves the node to its replica, as a managed primary endpoint
	// moves on failover: every client's link to the node now leads to the
	// replica, the connections open through it are closed, and the old
	// master is killed. Direct, Kill, Start and the others then act on the
	// replica. The node must have a replica, detached or not.
	Failover(ctx context.Context, node int) error

	// JumpClock makes a master act as if its clock had jumped forward by d:
	// every key's expiry moves d earlier (PEXPIREAT key PEXPIRETIME-d, from
	// a Lua script), so keys whose time ran out are gone. It returns how
	// many keys it moved.
	JumpClock(ctx context.Context, node int, d time.Duration) (int, error)
}

// Persistence says how a master keeps its data across a restart.
type Persistence int

const (
	// Ephemeral keeps nothing: no RDB, no AOF. A restart comes back empty.
	Ephemeral Persistence = iota
	// FsyncAlways logs every write and fsyncs it before replying
	// (appendonly yes, appendfsync always).
	FsyncAlways
)

// String names the persistence as redis-server is configured for it.
func (p Persistence) String() string {
	if p == FsyncAlways {
		return "appendfsync always"
	}
	return "no persistence"
}

// args returns redis-server's persistence arguments.
func (p Persistence) args() []string {
	if p == FsyncAlways {
		return []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	return []string{"--appendonly", "no", "--save", ""}
}

// Spec says what cluster to start.
type Spec struct {
	Nodes       int
	Clients     int // how many clients get links of their own
	Persistence Persistence
	// Replicas are the nodes that get a replica of their own, started with
	// the cluster and in sync with its master, for DetachReplica and
	// Failover. The replicas keep no data across a restart.
	Replicas []int
	// Shards, when positive, makes every node a Redis Cluster of that many
	// shard masters (at least 3) instead of one master: the Cluster is
	// then a Sharded. The process backend only; see Sharded.
	Shards int
	// ShardReplicas is the number of replicas of each shard master, for
	// FailoverShard.
	ShardReplicas int
}

func (s Spec) validate() error {
	switch {
	case s.Nodes < 1:
		return fmt.Errorf("cluster: %d nodes; need at least one", s.Nodes)
	case s.Clients < 1:
		return fmt.Errorf("cluster: %d clients; need at least one", s.Clients)
	}
	for _, n := range s.Replicas {
		if n < 0 || n >= s.Nodes {
			return fmt.Errorf("cluster: replica of node %d, out of range [0, %d)", n, s.Nodes)
		}
	}
	switch {
	case s.Shards == 0 && s.ShardReplicas != 0:
		return fmt.Errorf("cluster: %d replicas per shard without shards", s.ShardReplicas)
	case s.Shards == 0:
	case s.Shards < 3:
		return fmt.Errorf("cluster: Redis Clusters of %d shards; redis-cli creates them with 3 or more", s.Shards)
	case s.ShardReplicas < 0:
		return fmt.Errorf("cluster: %d replicas per shard; want 0 or more", s.ShardReplicas)
	case len(s.Replicas) > 0:
		return errors.New("cluster: Replicas are for standalone masters; a Redis Cluster's shards take ShardReplicas")
	}
	return nil
}

// AllClients in a Link means every client's path to the node.
const AllClients = -1

// Link is one client's path to one master.
type Link struct {
	Client int // or AllClients
	Node   int
}

// String is "client 2 -> n0", or "all clients -> n0".
func (l Link) String() string {
	if l.Client == AllClients {
		return fmt.Sprintf("all clients -> n%d", l.Node)
	}
	return fmt.Sprintf("client %d -> n%d", l.Client, l.Node)
}

// ImpairmentKind is what an impairment does to a link.
type ImpairmentKind int

const (
	// Slow delays every reply (toxiproxy latency toxic, downstream).
	Slow ImpairmentKind = iota + 1
	// DropReplies lets requests through, so the master runs them, and
	// swallows the replies (timeout toxic, downstream).
	DropReplies
	// Blackhole drops everything both ways and leaves connections hanging,
	// like a network partition (timeout toxics, both ways).
	Blackhole
	// Reject resets every connection as soon as the client sends on it, like
	// a firewall that rejects (reset_peer toxic, upstream).
	Reject
)

// String names the impairment kind, as the timelines label it.
func (k ImpairmentKind) String() string {
	switch k {
	case Slow:
		return "slow"
	case DropReplies:
		return "replies dropped"
	case Blackhole:
		return "blackholed"
	case Reject:
		return "rejected"
	}
	return fmt.Sprintf("ImpairmentKind(%d)", int(k))
}

// Impairment is a fault on a link.
type Impairment struct {
	Kind    ImpairmentKind
	Latency time.Duration // for Slow
	Jitter  time.Duration // for Slow: the latency varies by up to this much either way
}

// Latency returns a Slow impairment.
func Latency(d, jitter time.Duration) Impairment {
	return Impairment{Kind: Slow, Latency: d, Jitter: jitter}
}

// String describes the impairment, with its latency for Slow.
func (i Impairment) String() string {
	if i.Kind == Slow {
		return fmt.Sprintf("slow %v±%v", i.Latency, i.Jitter)
	}
	return i.Kind.String()
}

// checkNode returns an error for a node index out of range.
func checkNode(c Cluster, node int) error {
	if node < 0 || node >= c.Size() {
		return fmt.Errorf("cluster: node %d out of range [0, %d)", node, c.Size())
	}
	return nil
}
