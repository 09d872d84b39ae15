package cluster

import (
	"context"
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

// Start starts spec.Nodes servers and the clients' links to them. Their
// removal is registered with tb.Cleanup.
func (Process) Start(ctx context.Context, tb testing.TB, spec Spec) (Cluster, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	servers := redistest.Start(tb, spec.Nodes, persistence(spec.Persistence))
	l, err := newLinks(spec.Clients, redistest.Addrs(servers))
	if err != nil {
		return nil, err
	}
	tb.Cleanup(l.close) // runs before the servers are killed
	return &processCluster{servers: servers, links: l, clients: spec.Clients}, nil
}

func persistence(p Persistence) redistest.Persistence {
	if p == FsyncAlways {
		return redistest.FsyncAlways
	}
	return redistest.Ephemeral
}

type processCluster struct {
	servers []*redistest.Server
	links   *links
	clients int
}

func (c *processCluster) Backend() string           { return "process" }
func (c *processCluster) Size() int                 { return len(c.servers) }
func (c *processCluster) Clients() int              { return c.clients }
func (c *processCluster) Addrs(client int) []string { return c.links.addrs(client) }
func (c *processCluster) Direct(node int) string {
	if checkNode(c, node) != nil {
		return ""
	}
	return c.servers[node].Addr()
}

func (c *processCluster) signal(node int, f func(*redistest.Server) error) error {
	if err := checkNode(c, node); err != nil {
		return err
	}
	return f(c.servers[node])
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
	return waitReady(ctx, c.servers[node].Addr(), 10*time.Second)
}

func (c *processCluster) Impair(ctx context.Context, l Link, imp Impairment) error {
	return c.links.impair(ctx, l, imp)
}

func (c *processCluster) Heal(ctx context.Context, l Link) error { return c.links.heal(ctx, l) }

func (c *processCluster) JumpClock(ctx context.Context, node int, d time.Duration) (int, error) {
	if err := checkNode(c, node); err != nil {
		return 0, err
	}
	return jumpClock(ctx, c.servers[node].Addr(), d)
}
