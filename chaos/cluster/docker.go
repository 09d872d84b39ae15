package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// Labels on everything the docker backend creates. A run that died before
// its clean-up (a -timeout panic, a SIGKILL) is recognised by its owner
// process being gone, and its leftovers removed by the next run.
const (
	labelSuite = "org.quorumlock.chaos"
	labelPID   = "org.quorumlock.chaos.pid"
	labelHost  = "org.quorumlock.chaos.host"
)

// readyLimit bounds how long a container may take to answer PING.
const readyLimit = 30 * time.Second

// Docker is the backend of one container per master on a private network.
type Docker struct {
	pool  *dockertest.Pool
	image imageRef
}

// NewDocker connects to the Docker engine, removes what dead runs of the
// suite left behind, and builds the image or reuses it. It fails if no
// engine answers. tb.Cleanup closes its idle connections.
func NewDocker(ctx context.Context, tb testing.TB) (*Docker, error) {
	pool, err := pingDocker(ctx)
	if err != nil {
		return nil, err
	}
	tb.Cleanup(func() { pool.Client.HTTPClient.CloseIdleConnections() })
	if err := reap(ctx, pool.Client); err != nil {
		tb.Logf("cluster: removing leftovers of dead runs: %v", err)
	}
	img, err := ensureImage(ctx, pool.Client)
	if err != nil {
		return nil, err
	}
	return &Docker{pool: pool, image: img}, nil
}

// pingDocker returns a pool whose engine answered a ping.
func pingDocker(ctx context.Context) (*dockertest.Pool, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("cluster: docker: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pool.Client.PingWithContext(ctx); err != nil {
		pool.Client.HTTPClient.CloseIdleConnections()
		return nil, fmt.Errorf("cluster: docker engine does not answer: %w", err)
	}
	return pool, nil
}

// Name returns "docker".
func (d *Docker) Name() string { return "docker" }

// Image names the image the containers run, and says whether this run
// built it.
func (d *Docker) Image() (name string, built bool) { return d.image.String(), d.image.Built }

// Start creates a private network and spec.Nodes containers on it, each
// publishing its port on a fixed loopback port so that a restarted container
// comes back at the same address, and the clients' links to them. Their
// removal is registered with tb.Cleanup. Nodes that are Redis Clusters
// (spec.Shards) are not supported.
func (d *Docker) Start(ctx context.Context, tb testing.TB, spec Spec) (Cluster, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if spec.Shards > 0 {
		// A cluster tells its clients the addresses its nodes announce:
		// here those of the private network, which the test process does
		// not reach. Each node would have to announce its published
		// loopback ports (cluster-announce-ip, -port and -bus-port).
		return nil, fmt.Errorf("cluster: nodes that are Redis Clusters on the docker backend: %w", ErrUnsupported)
	}
	// Runs after the containers and the network are gone, so that no
	// keep-alive connection of this cluster's requests outlives it.
	tb.Cleanup(func() { d.pool.Client.HTTPClient.CloseIdleConnections() })
	host, _ := os.Hostname()
	c := &dockerCluster{
		d:       d,
		prefix:  "quorumlock-chaos-" + runID(),
		clients: spec.Clients,
		labels:  map[string]string{labelSuite: "run", labelPID: strconv.Itoa(os.Getpid()), labelHost: host},
	}
	network, err := d.pool.CreateNetwork(c.prefix, func(o *dc.CreateNetworkOptions) {
		o.Labels = c.labels
		o.Context = ctx
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: create network: %w", err)
	}
	c.network = network
	tb.Cleanup(func() {
		if err := d.pool.Client.RemoveNetwork(network.Network.ID); err != nil {
			tb.Errorf("cluster: remove network %s: %v", c.prefix, err)
		}
	})
	upstreams := make([]string, spec.Nodes)
	for i := range spec.Nodes {
		n := &container{name: fmt.Sprintf("%s-n%d", c.prefix, i), persistence: spec.Persistence}
		c.nodes = append(c.nodes, n)
		tb.Cleanup(func() {
			if err := c.remove(n); err != nil {
				tb.Errorf("cluster: remove container %s: %v", n.name, err)
			}
		})
		if err := c.create(ctx, n); err != nil {
			return nil, err
		}
		upstreams[i] = n.addr()
	}
	c.replicas = map[int]*container{}
	for _, i := range spec.Replicas {
		r := &container{name: fmt.Sprintf("%s-n%d-replica", c.prefix, i), replicaOf: c.nodes[i].name}
		c.replicas[i] = r
		tb.Cleanup(func() {
			if err := c.remove(r); err != nil {
				tb.Errorf("cluster: remove container %s: %v", r.name, err)
			}
		})
		if err := c.create(ctx, r); err != nil {
			return nil, err
		}
		if err := waitSynced(ctx, r.addr(), readyLimit); err != nil {
			return nil, err
		}
	}
	l, err := newLinks(spec.Clients, upstreams)
	if err != nil {
		return nil, err
	}
	tb.Cleanup(l.close)
	c.links = l
	return c, nil
}

// runID returns a short random name for one cluster.
func runID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type dockerCluster struct {
	d       *Docker
	prefix  string
	labels  map[string]string
	network *dockertest.Network
	links   *links
	clients int

	mu       sync.Mutex // guards the nodes' ids and persistence, and which container is which node
	nodes    []*container
	replicas map[int]*container
}

// container is one master's container, or a replica's.
type container struct {
	name        string
	id          string
	port        int
	persistence Persistence
	replicaOf   string // the master's container name, for a replica
}

func (n *container) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

// create runs the master's container and waits until it answers. The host
// port is chosen free just before; if another process takes it first, the
// creation is tried again on another port.
func (c *dockerCluster) create(ctx context.Context, n *container) error {
	var err error
	for try := 0; try < 5; try++ {
		if n.port, err = redistest.FreePort(); err != nil {
			continue
		}
		if err = c.run(n); err == nil {
			return waitReady(ctx, n.addr(), readyLimit)
		}
		// A container made before the failure would hold the name.
		if rerr := c.d.pool.RemoveContainerByName(n.name); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return fmt.Errorf("cluster: start container %s: %w", n.name, err)
}

func (c *dockerCluster) run(n *container) error {
	img := c.d.image
	cmd := append([]string{"redis-server", "--port", "6379", "--protected-mode", "no", "--dir", "/data", "--loglevel", "warning",
		"--repl-diskless-sync-delay", "0"}, n.persistence.args()...)
	if n.replicaOf != "" {
		cmd = append(cmd, "--replicaof", n.replicaOf, "6379")
	}
	res, err := c.d.pool.RunWithOptions(&dockertest.RunOptions{
		Name:         n.name,
		Repository:   img.Repo,
		Tag:          img.Tag,
		Cmd:          cmd,
		NetworkID:    c.network.Network.ID,
		ExposedPorts: []string{"6379/tcp"},
		PortBindings: map[dc.Port][]dc.PortBinding{
			"6379/tcp": {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(n.port)}},
		},
		Labels: c.labels,
	}, func(hc *dc.HostConfig) {
		hc.PublishAllPorts = false
		hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	n.id = res.Container.ID
	c.mu.Unlock()
	return nil
}

// remove deletes the master's container and its anonymous volumes.
func (c *dockerCluster) remove(n *container) error {
	c.mu.Lock()
	id := n.id
	n.id = ""
	c.mu.Unlock()
	if id == "" {
		return nil
	}
	err := c.d.pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: id, Force: true, RemoveVolumes: true})
	var gone *dc.NoSuchContainer
	if errors.As(err, &gone) {
		return nil
	}
	return err
}

func (c *dockerCluster) Backend() string           { return "docker" }
func (c *dockerCluster) Size() int                 { return len(c.nodes) }
func (c *dockerCluster) Clients() int              { return c.clients }
func (c *dockerCluster) Addrs(client int) []string { return c.links.addrs(client) }
func (c *dockerCluster) Direct(node int) string {
	n, _, err := c.node(node)
	if err != nil {
		return ""
	}
	return n.addr()
}

// node returns a node's container id.
func (c *dockerCluster) node(node int) (*container, string, error) {
	if err := checkNode(c, node); err != nil {
		return nil, "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[node], c.nodes[node].id, nil
}

// kill sends sig to the master's redis-server, which is the container's
// PID 1. Signals from the engine reach PID 1 even when it installed no
// handler for them, as SIGSTOP and SIGKILL must.
func (c *dockerCluster) kill(ctx context.Context, node int, sig dc.Signal) error {
	_, id, err := c.node(node)
	if err != nil {
		return err
	}
	err = c.d.pool.Client.KillContainer(dc.KillContainerOptions{ID: id, Signal: sig, Context: ctx})
	var notRunning *dc.ContainerNotRunning
	if errors.As(err, &notRunning) && (sig == dc.SIGKILL || sig == dc.SIGTERM) {
		return nil // already down
	}
	if err != nil {
		return fmt.Errorf("cluster: signal %d to node %d: %w", sig, node, err)
	}
	return nil
}

// waitExit waits until the master's container has stopped.
func (c *dockerCluster) waitExit(ctx context.Context, node int) error {
	_, id, err := c.node(node)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := c.d.pool.Client.WaitContainerWithContext(id, ctx); err != nil {
		return fmt.Errorf("cluster: wait for node %d to exit: %w", node, err)
	}
	return nil
}

func (c *dockerCluster) Kill(ctx context.Context, node int) error {
	if err := c.kill(ctx, node, dc.SIGKILL); err != nil {
		return err
	}
	return c.waitExit(ctx, node)
}

func (c *dockerCluster) Stop(ctx context.Context, node int) error {
	if err := c.kill(ctx, node, dc.SIGTERM); err != nil {
		return err
	}
	// A paused master cannot act on SIGTERM until it runs again.
	if err := c.kill(ctx, node, dc.SIGCONT); err != nil {
		var notRunning *dc.ContainerNotRunning
		if !errors.As(err, &notRunning) {
			return err
		}
	}
	return c.waitExit(ctx, node)
}

func (c *dockerCluster) Pause(ctx context.Context, node int) error {
	return c.kill(ctx, node, dc.SIGSTOP)
}

func (c *dockerCluster) Unpause(ctx context.Context, node int) error {
	return c.kill(ctx, node, dc.SIGCONT)
}

// Start starts the stopped container again; it keeps its files, so with
// FsyncAlways the master reloads its log. To change the persistence, the
// container is replaced by a new one at the same address.
func (c *dockerCluster) Start(ctx context.Context, node int, p Persistence) error {
	n, id, err := c.node(node)
	if err != nil {
		return err
	}
	c.mu.Lock()
	same := n.persistence == p
	c.mu.Unlock()
	if !same {
		if err := c.remove(n); err != nil {
			return err
		}
		c.mu.Lock()
		n.persistence = p
		c.mu.Unlock()
		if err := c.run(n); err != nil {
			return fmt.Errorf("cluster: replace node %d: %w", node, err)
		}
		return waitReady(ctx, n.addr(), readyLimit)
	}
	if err := c.d.pool.Client.StartContainerWithContext(id, nil, ctx); err != nil {
		return fmt.Errorf("cluster: start node %d: %w", node, err)
	}
	return waitReady(ctx, n.addr(), readyLimit)
}

func (c *dockerCluster) Impair(ctx context.Context, l Link, imp Impairment) error {
	return c.links.impair(ctx, l, imp)
}

func (c *dockerCluster) Heal(ctx context.Context, l Link) error { return c.links.heal(ctx, l) }

func (c *dockerCluster) JumpClock(ctx context.Context, node int, d time.Duration) (int, error) {
	n, _, err := c.node(node)
	if err != nil {
		return 0, err
	}
	return jumpClock(ctx, n.addr(), d)
}

// replica returns the node's replica container.
func (c *dockerCluster) replica(node int) (*container, error) {
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

func (c *dockerCluster) DetachReplica(ctx context.Context, node int) error {
	r, err := c.replica(node)
	if err != nil {
		return err
	}
	return detach(ctx, r.addr())
}

func (c *dockerCluster) Failover(ctx context.Context, node int) error {
	r, err := c.replica(node)
	if err != nil {
		return err
	}
	if err := c.links.repoint(node, r.addr()); err != nil {
		return err
	}
	if err := c.Kill(ctx, node); err != nil {
		return err
	}
	c.mu.Lock()
	c.nodes[node] = r
	delete(c.replicas, node)
	c.mu.Unlock()
	return nil
}
