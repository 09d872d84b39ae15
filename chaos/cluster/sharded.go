package cluster

import (
	"context"
	"errors"
)

// ErrUnsupported is returned, wrapped, by a backend asked for a cluster it
// cannot start, and by a Cluster asked for a fault it cannot inject.
var ErrUnsupported = errors.New("not supported")

// Sharded is a Cluster whose nodes are Redis Clusters (Spec.Shards): each
// node of the lock is a cluster of shard masters, each with its replicas.
//
// Addrs and Direct give a node as a cluster URL,
// "redis+cluster://host:port,...", listing every server of the cluster as a
// seed; every client gets the same URLs. A cluster client learns the
// shards' own addresses from the cluster and goes to them directly, so
// there are no links in between: Impair and Heal, and the faults on a whole
// node (Kill, Stop, Pause, Unpause, Start, DetachReplica, Failover,
// JumpClock), return ErrUnsupported. Faults hit one shard of one node
// instead, through LagReplicas and FailoverShard.
type Sharded interface {
	Cluster
	// Masters returns the addresses of the node's shard masters now.
	Masters(node int) ([]string, error)
	// MasterFor returns the address of the node's shard master that owns
	// the hash slot now.
	MasterFor(node, slot int) (string, error)
	// LagReplicas waits until the replicas of the node's shard master that
	// owns slot have every write it made, then cuts them off its
	// replication stream: the master closes their links and refuses their
	// PSYNC and SYNC (an ACL on its default user), so they cannot catch up.
	// From then on they lack every write made on that master, as replicas
	// do whose asynchronous replication is behind. A replica cut off for
	// longer than the cluster allows (cluster-replica-validity-factor: with
	// the node timeout of 1 s, some 20 s) is no longer promoted.
	LagReplicas(ctx context.Context, node, slot int) error
	// FailoverShard kills the node's shard master that owns slot (SIGKILL)
	// and waits until the cluster promotes one of its replicas, after the
	// cluster's node timeout and an election; a replica that LagReplicas
	// cut off is promoted without what it missed. It waits until the
	// cluster serves every slot again, and returns the killed master's
	// address and the promoted replica's.
	FailoverShard(ctx context.Context, node, slot int) (killed, promoted string, err error)
}
