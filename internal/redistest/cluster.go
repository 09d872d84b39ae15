package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/slot"
)

// ClusterOptions says what StartCluster starts.
type ClusterOptions struct {
	// Shards is the number of masters, each owning an equal share of the
	// slots. Default 3, which is also the least redis-cli accepts.
	Shards int
	// Replicas is the number of replicas of each master. Default 0.
	Replicas int
	// NodeTimeout is cluster-node-timeout: how long a node may not answer
	// before the others count it failing, and so how soon a replica takes
	// over. Default 1 s, short enough for quick failovers and long enough
	// that a loaded machine does not fail a master over by mistake.
	NodeTimeout time.Duration
	// Persistence applies to every node. Default Ephemeral.
	Persistence Persistence
	// Extra holds more redis-server arguments for every node. They must not
	// require a password: redis-cli joins the nodes as the default user.
	Extra []string
}

// Cluster is a Redis Cluster of redis-server child processes on loopback,
// each with its own client port and cluster bus port.
type Cluster struct {
	opts  ClusterOptions
	cli   string
	nodes []*Server
}

// CLIBinary returns the path of redis-cli, or an error that says how to
// install it.
func CLIBinary() (string, error) {
	if p := os.Getenv("REDIS_CLI"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("redis-cli")
	if err != nil {
		return "", errors.New("redistest: redis-cli not found on PATH; install it (apt-get install -y redis-tools) or set REDIS_CLI")
	}
	return p, nil
}

// StartCluster starts a Redis Cluster, joins it with redis-cli --cluster
// create, waits until it is ready (see WaitReady) and registers its removal
// with tb.Cleanup. It fails tb if the cluster cannot start.
func StartCluster(tb testing.TB, opts ClusterOptions) *Cluster {
	tb.Helper()
	return StartClusters(tb, 1, opts)[0]
}

// StartClusters starts n independent clusters with the same options at
// once, as StartCluster starts one: joining a cluster is mostly waiting, so
// n clusters take about as long as one.
func StartClusters(tb testing.TB, n int, opts ClusterOptions) []*Cluster {
	tb.Helper()
	opts, err := opts.withDefaults()
	if err != nil {
		tb.Fatal(err)
	}
	bin, err := Binary()
	if err != nil {
		tb.Fatal(err)
	}
	cli, err := CLIBinary()
	if err != nil {
		tb.Fatal(err)
	}
	clusters := make([]*Cluster, n)
	for i := range clusters {
		c := &Cluster{opts: opts, cli: cli}
		for range opts.Shards * (1 + opts.Replicas) {
			c.nodes = append(c.nodes, &Server{Dir: tb.TempDir(), bin: bin})
		}
		tb.Cleanup(c.Stop)
		clusters[i] = c
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, c := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.boot()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		tb.Fatal(err)
	}
	return clusters
}

func (o ClusterOptions) withDefaults() (ClusterOptions, error) {
	if o.Shards == 0 {
		o.Shards = 3
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = time.Second
	}
	switch {
	case o.Shards < 3:
		return o, fmt.Errorf("redistest: a cluster of %d shards: redis-cli creates one of 3 or more", o.Shards)
	case o.Replicas < 0:
		return o, fmt.Errorf("redistest: %d replicas per shard: want 0 or more", o.Replicas)
	case o.NodeTimeout < time.Millisecond:
		return o, fmt.Errorf("redistest: cluster node timeout %v: want 1ms or more", o.NodeTimeout)
	}
	return o, nil
}

// readyLimit bounds every wait for the cluster to settle: a failover takes
// the node timeout to be noticed, up to about as long again to be agreed,
// and a replica's election waits up to 1.5 s.
func (c *Cluster) readyLimit() time.Duration { return 10*c.opts.NodeTimeout + 15*time.Second }

// boot starts the nodes, joins them and waits until the cluster is ready.
func (c *Cluster) boot() error {
	for _, s := range c.nodes {
		if err := c.startNode(s); err != nil {
			return err
		}
	}
	if err := c.create(); err != nil {
		return err
	}
	return c.WaitReady(c.readyLimit())
}

// startNode starts s on a free client port and a free bus port. Two ports
// are asked for, not the default bus port 10000 above the client port,
// which may be taken or past 65535.
func (c *Cluster) startNode(s *Server) error {
	var err error
	for try := 0; try < 5; try++ { // a freed port can be taken again before we bind it
		var ports []int
		if ports, err = FreePorts(2); err != nil {
			continue
		}
		s.Port = ports[0]
		s.extra = append([]string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.Dir, "nodes.conf"),
			"--cluster-port", strconv.Itoa(ports[1]),
			"--cluster-node-timeout", strconv.FormatInt(c.opts.NodeTimeout.Milliseconds(), 10),
			// A master waits 5 s by default before a diskless full sync,
			// for more replicas to join it.
			"--repl-diskless-sync-delay", "0",
		}, c.opts.Extra...)
		if err = s.start(c.opts.Persistence); err == nil {
			return nil
		}
	}
	return fmt.Errorf("redistest: starting a cluster node: %w", err)
}

// create runs redis-cli --cluster create over the nodes. It makes the first
// Shards nodes the masters, as all share one host.
func (c *Cluster) create() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.readyLimit())
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(c.opts.Replicas), "--cluster-yes")
	out, err := exec.CommandContext(ctx, c.cli, args...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "[OK] All 16384 slots covered") {
		return fmt.Errorf("redistest: redis-cli --cluster create: %v: %s", err, out)
	}
	return nil
}

// Addrs returns the address of every node, masters and replicas, in the
// order they were started: seeds for a cluster client. A killed node's
// address stays in the list.
func (c *Cluster) Addrs() []string { return Addrs(c.nodes) }

// Nodes returns every node, in the order of Addrs.
func (c *Cluster) Nodes() []*Server { return slices.Clone(c.nodes) }

// Server returns the node at addr, or nil if none of the cluster's is.
func (c *Cluster) Server(addr string) *Server {
	for _, s := range c.nodes {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// view returns the cluster as the first running node that answers sees it.
func (c *Cluster) view() (clusterView, error) {
	var errs []error
	for _, s := range c.nodes {
		if s.PID() == 0 {
			continue
		}
		v, err := readView(s.Addr())
		if err == nil {
			return v, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("redistest: no cluster node answers: %w", errors.Join(errs...))
}

// Masters returns the addresses of the masters that own slots now, ordered
// by their first slot, as the first running node that answers sees it.
func (c *Cluster) Masters() ([]string, error) {
	v, err := c.view()
	if err != nil {
		return nil, err
	}
	return v.masters(), nil
}

// MasterFor returns the address of the master that owns slot s now, as the
// first running node that answers sees it.
func (c *Cluster) MasterFor(s int) (string, error) {
	if s < 0 || s >= slot.Count {
		return "", fmt.Errorf("redistest: slot %d, want 0 to %d", s, slot.Count-1)
	}
	v, err := c.view()
	if err != nil {
		return "", err
	}
	if a := v.owner(s); a != "" {
		return a, nil
	}
	return "", fmt.Errorf("redistest: no master owns slot %d", s)
}

// Migrate starts moving slot s from its master to another master of the
// cluster, and returns both: the old master answers ASK for the slot's keys
// it lacks, and the new one serves them after ASKING. The slot is left
// migrating.
func (c *Cluster) Migrate(s int) (from, to string, err error) {
	if from, err = c.MasterFor(s); err != nil {
		return "", "", err
	}
	masters, err := c.Masters()
	if err != nil {
		return "", "", err
	}
	for _, m := range masters {
		if m != from {
			to = m
			break
		}
	}
	if to == "" {
		return "", "", fmt.Errorf("redistest: no other master to move slot %d to", s)
	}
	fromID, err := DoAt(from, "CLUSTER", "MYID")
	if err != nil {
		return "", "", err
	}
	toID, err := DoAt(to, "CLUSTER", "MYID")
	if err != nil {
		return "", "", err
	}
	if _, err = DoAt(to, "CLUSTER", "SETSLOT", fmt.Sprint(s), "IMPORTING", fromID); err != nil {
		return "", "", err
	}
	if _, err = DoAt(from, "CLUSTER", "SETSLOT", fmt.Sprint(s), "MIGRATING", toID); err != nil {
		return "", "", err
	}
	return from, to, nil
}

// KeyOn returns a key without a hash tag, prefix followed by "-" and a
// number, whose slot the master at addr owns now, and that slot, as the
// first running node that answers sees it.
func (c *Cluster) KeyOn(addr, prefix string) (string, int, error) {
	v, err := c.view()
	if err != nil {
		return "", 0, err
	}
	// A master of k owns 1/k of the slots: 1000 keys all miss it with a
	// chance of (1-1/k)^1000, nil for the clusters tests start.
	for n := range 1000 {
		key := fmt.Sprintf("%s-%d", prefix, n)
		if s := slot.Of(key); v.owner(s) == addr {
			return key, s, nil
		}
	}
	return "", 0, fmt.Errorf("redistest: no key with prefix %q on %s (masters: %v)", prefix, addr, v.masters())
}

// ReplicasOf returns the addresses of the master's replicas, as the first
// running node that answers sees it.
func (c *Cluster) ReplicasOf(master string) ([]string, error) {
	v, err := c.view()
	if err != nil {
		return nil, err
	}
	return v.replicasOf(master), nil
}

// KillMaster sends SIGKILL to the master at addr and waits until it is
// gone. Its replica, if it has one, takes over after the node timeout;
// without one, its slots stay unserved and the cluster fails until it is
// restarted (Server(addr).Restart).
func (c *Cluster) KillMaster(addr string) error {
	s := c.Server(addr)
	if s == nil {
		return fmt.Errorf("redistest: %s is not a node of this cluster", addr)
	}
	masters, err := c.Masters()
	if err != nil {
		return err
	}
	if !slices.Contains(masters, addr) {
		return fmt.Errorf("redistest: %s is not a master owning slots (masters: %v)", addr, masters)
	}
	return s.Kill()
}

// Failover kills the master at addr, waits until one of its replicas owns
// its slots and the cluster is ready again (WaitReady), and returns the
// promoted replica's address. A write the master made that had not reached
// the replica is lost, as in a real failover.
func (c *Cluster) Failover(addr string) (string, error) {
	v, err := c.view()
	if err != nil {
		return "", err
	}
	replicas := v.replicasOf(addr)
	var owned []int
	for _, r := range v.slotMap() {
		if r.addr == addr {
			owned = append(owned, r.lo)
		}
	}
	if len(owned) == 0 || len(replicas) == 0 {
		return "", fmt.Errorf("redistest: %s is not a master with slots and replicas (replicas %v)", addr, replicas)
	}
	if err := c.KillMaster(addr); err != nil {
		return "", err
	}
	if err := c.WaitReady(c.readyLimit()); err != nil {
		return "", fmt.Errorf("redistest: failover of %s: %w", addr, err)
	}
	promoted, err := c.MasterFor(owned[0])
	if err != nil {
		return "", err
	}
	if !slices.Contains(replicas, promoted) {
		return "", fmt.Errorf("redistest: failover of %s: slot %d went to %s, not to a replica of it (%v)", addr, owned[0], promoted, replicas)
	}
	return promoted, nil
}

// Stop kills every node and waits until each has exited. It is registered
// with tb.Cleanup and may be called before.
func (c *Cluster) Stop() {
	for _, s := range c.nodes {
		s.Kill()
	}
}

// WaitReady waits, up to limit, until the cluster serves every slot: every
// running node says cluster_state:ok, knows every node, and sees the same
// owner for every slot, each slot owned by a running master none sees
// failing; and every running replica is in sync with its master, whose
// writes reach it.
func (c *Cluster) WaitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var why error
	for time.Now().Before(deadline) {
		if why = c.settled(); why == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if why != nil {
		return fmt.Errorf("redistest: cluster not ready after %v: %w", limit, why)
	}
	v, err := c.view()
	if err != nil {
		return err
	}
	done := map[string]bool{} // masters whose replicas were checked
	for _, r := range v.slotMap() {
		if done[r.addr] {
			continue
		}
		done[r.addr] = true
		// The marker goes in the master's first slot, so that it takes it.
		tag, err := slot.TagFor(r.lo)
		if err != nil {
			return err
		}
		master := c.Server(r.addr)
		for _, a := range v.replicasOf(r.addr) {
			replica := c.Server(a)
			if master == nil || replica == nil || replica.PID() == 0 {
				continue
			}
			if err := waitStreaming(master, replica, "redistest:replica-sync:{"+tag+"}", true, time.Until(deadline)); err != nil {
				return err
			}
		}
	}
	return nil
}

// settled returns nil when the cluster is ready as WaitReady says, or else
// why not.
func (c *Cluster) settled() error {
	var want []slotRange
	wantFrom := ""
	views := map[string]clusterView{} // running node's address → its view
	for _, s := range c.nodes {
		if s.PID() == 0 {
			continue
		}
		info, err := s.Do("CLUSTER", "INFO")
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok\r\n") {
			return fmt.Errorf("%s: cluster_state is not ok", s.Addr())
		}
		v, err := readView(s.Addr())
		if err != nil {
			return err
		}
		views[s.Addr()] = v
		if len(v) != len(c.nodes) {
			return fmt.Errorf("%s knows %d nodes of %d", s.Addr(), len(v), len(c.nodes))
		}
		for _, n := range v {
			if n.has("handshake") || n.has("noaddr") {
				return fmt.Errorf("%s sees %s as %v", s.Addr(), n.addr, n.flags)
			}
		}
		m := v.slotMap()
		if !covers(m) {
			return fmt.Errorf("%s sees slots unowned: %v", s.Addr(), m)
		}
		for _, n := range v {
			if len(n.slots) > 0 && (n.has("fail") || n.has("fail?")) {
				return fmt.Errorf("%s sees master %s as %v", s.Addr(), n.addr, n.flags)
			}
		}
		for _, r := range m {
			if o := c.Server(r.addr); o == nil || o.PID() == 0 {
				return fmt.Errorf("slots %d-%d belong to %s, which is not running", r.lo, r.hi, r.addr)
			}
		}
		if wantFrom == "" {
			want, wantFrom = m, s.Addr()
		} else if !slices.Equal(m, want) {
			return fmt.Errorf("%s and %s disagree on the slots: %v and %v", wantFrom, s.Addr(), want, m)
		}
		rep, err := s.Info("replication")
		if err != nil {
			return err
		}
		if rep["role"] == "slave" && (rep["master_link_status"] != "up" || rep["master_sync_in_progress"] != "0") {
			return fmt.Errorf("replica %s is not in sync: %v", s.Addr(), rep)
		}
	}
	if wantFrom == "" {
		return errors.New("no cluster node is running")
	}
	return agreeOnRoles(views)
}

// agreeOnRoles returns nil when every running node's view gives every
// running node the role (master, or replica of which master) that node
// gives itself. Right after a join or a failover, gossip may not yet have
// told the others that a node became a replica, and a view that still
// shows it as a master without slots hides the replica from ReplicasOf.
func agreeOnRoles(views map[string]clusterView) error {
	self := map[string]string{} // address → its master's id as it says, "" for a master
	for addr, v := range views {
		for _, n := range v {
			if n.has("myself") {
				self[addr] = n.master
			}
		}
	}
	for from, v := range views {
		for _, n := range v {
			says, running := self[n.addr]
			if running && n.master != says {
				return fmt.Errorf("%s sees %s as replica of %q; %s says %q", from, n.addr, n.master, n.addr, says)
			}
		}
	}
	return nil
}
