package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// Process is the backend of redis-server child processes on loopback ports,
// started with the library's redistest helper. The servers die with the test
// binary even if it is killed.
type Process struct{}

// Name returns "process".
func (Process) Name() string { return "process" }

// Start starts spec.Nodes servers and the clients' links to them, or with
// spec.Shards spec.Nodes Redis Clusters (a Sharded). Their removal is
// registered with tb.Cleanup.
func (Process) Start(ctx context.Context, tb testing.TB, spec Spec) (Cluster, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if spec.Shards > 0 {
		return startSharded(tb, spec), nil
	}
	servers := redistest.Start(tb, spec.Nodes, persistence(spec.Persistence))
	replicas := map[int]*redistest.Server{}
	for _, n := range spec.Replicas {
		replicas[n] = redistest.StartReplica(tb, servers[n])
	}
	l, err := newLinks(spec.Clients, redistest.Addrs(servers))
	if err != nil {
		return nil, err
	}
	tb.Cleanup(l.close) // runs before the servers are killed
	return &processCluster{servers: servers, replicas: replicas, links: l, clients: spec.Clients}, nil
}

func persistence(p Persistence) redistest.Persistence {
	if p == FsyncAlways {
		return redistest.FsyncAlways
	}
	return redistest.Ephemeral
}

type processCluster struct {
	mu       sync.Mutex // guards servers and replicas, which Failover swaps
	servers  []*redistest.Server
	replicas map[int]*redistest.Server
	links    *links
	clients  int
}

func (c *processCluster) Backend() string           { return "process" }
func (c *processCluster) Size() int                 { return len(c.servers) }
func (c *processCluster) Clients() int              { return c.clients }
func (c *processCluster) Addrs(client int) []string { return c.links.addrs(client) }
func (c *processCluster) Direct(node int) string {
	s, err := c.server(node)
	if err != nil {
		return ""
	}
	return s.Addr()
}

// server returns the server that is the node now.
func (c *processCluster) server(node int) (*redistest.Server, error) {
	if err := checkNode(c, node); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[node], nil
}

func (c *processCluster) signal(node int, f func(*redistest.Server) error) error {
	s, err := c.server(node)
	if err != nil {
		return err
	}
	return f(s)
}

func (c *processCluster) Kill(_ context.Context, node int) error {
	return c.signal(node, (*redistest.Server).Kill)
}

func (c *processCluster) Stop(_ context.Context, node int) error {
	return c.signal(node, (*redistest.Server).Stop)
}

func (c *processCluster) Pause(_ context.Context, node int) error {
	return c.signal(node, (*redistest.Server).Pause)
}

func (c *processCluster) Unpause(_ context.Context, node int) error {
	return c.signal(node, (*redistest.Server).Resume)
}

func (c *processCluster) Start(ctx context.Context, node int, p Persistence) error {
	if err := c.signal(node, func(s *redistest.Server) error { return s.Restart(persistence(p)) }); err != nil {
		return err
	}
	return waitReady(ctx, c.Direct(node), 10*time.Second)
}

// replica returns the node's replica.
func (c *processCluster) replica(node int) (*redistest.Server, error) {
	if err := checkNode(c, node); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.replicas[node]
	if !ok {
		return nil, fmt.Errorf("cluster: node %d has no replica", node)
	}
	return r, nil
}

func (c *processCluster) DetachReplica(_ context.Context, node int) error {
	r, err := c.replica(node)
	if err != nil {
		return err
	}
	return r.Promote()
}

func (c *processCluster) Failover(_ context.Context, node int) error {
	r, err := c.replica(node)
	if err != nil {
		return err
	}
	if err := c.links.repoint(node, r.Addr()); err != nil {
		return err
	}
	c.mu.Lock()
	old := c.servers[node]
	c.servers[node] = r
	delete(c.replicas, node)
	c.mu.Unlock()
	return old.Kill()
}

func (c *processCluster) Impair(ctx context.Context, l Link, imp Impairment) error {
	return c.links.impair(ctx, l, imp)
}

func (c *processCluster) Heal(ctx context.Context, l Link) error { return c.links.heal(ctx, l) }

func (c *processCluster) JumpClock(ctx context.Context, node int, d time.Duration) (int, error) {
	s, err := c.server(node)
	if err != nil {
		return 0, err
	}
	return jumpClock(ctx, s.Addr(), d)
}
