package redigo

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/quorumlock/quorumlock/driver"
)

var _ driver.Master = (*Cluster)(nil)

// errClusterClosed is returned by a Cluster's calls after Close.
var errClusterClosed = errors.New("redigo: cluster closed")

// Cluster is one Redis Cluster as one master of the lock: a driver (see
// package driver) that runs each script on the master owning its keys' hash
// slot, over a Redis per master.
//
// It learns which master owns which slot from CLUSTER SLOTS, asked of a
// known node on first use, and again after a MOVED reply or a connection
// error. A MOVED reply is followed once, to the master it names, after the
// slot map is read again; an ASK reply (a slot being migrated) is followed
// once, with ASKING, to the node it names. Errors such as CROSSSLOT and
// CLUSTERDOWN are returned as driver.Error.
//
// The restart guard's questions (driver.Call.Check) are asked of the slot's
// master by its address, so the guard keeps health per shard master; a
// replica promoted by a failover has another address, and is asked as a new
// server.
type Cluster struct {
	name     string   // for Addr: the seeds
	seeds    []string // host:port
	nodeOpts []Option // every node's driver is New(addr, nodeOpts...)

	slots      atomic.Pointer[slotMap]
	stale      atomic.Bool   // a call saw a connection fail: read the map again
	refreshing chan struct{} // one CLUSTER SLOTS at a time

	mu     sync.Mutex
	nodes  map[string]*Redis // by "host:port"
	closed bool
}

// NewCluster returns a driver for the Redis Cluster that the seeds belong
// to. Each seed is a node's "host:port" or a redis:// or rediss:// URL, as
// New takes them; the settings of the first (user, password, TLS, timeouts,
// connections) and opts apply to every node of the cluster, and a database
// other than 0 is refused, as a cluster has only that one. Like New,
// NewCluster does not connect: the first call reads the slot map from a
// seed.
func NewCluster(seeds []string, opts ...Option) (*Cluster, error) {
	if len(seeds) == 0 {
		return nil, errors.New("redigo: a cluster needs at least one seed node")
	}
	c := &Cluster{refreshing: make(chan struct{}, 1), nodes: map[string]*Redis{}}
	var first config
	for i, s := range seeds {
		cfg, err := resolve(s, opts)
		if err != nil {
			return nil, fmt.Errorf("redigo: cluster seed %d: %w", i, err)
		}
		if cfg.db != 0 {
			return nil, fmt.Errorf("redigo: cluster seed %d (%s): database %d: a Redis Cluster has only database 0", i, cfg.addr, cfg.db)
		}
		if i == 0 {
			first = cfg
		}
		if !slices.Contains(c.seeds, cfg.addr) {
			c.seeds = append(c.seeds, cfg.addr)
		}
	}
	c.name = strings.Join(c.seeds, ",")
	c.nodeOpts = nodeOptions(first)
	return c, nil
}

// nodeOptions returns the options that give a node's driver the settings of
// cfg, whatever node it is for.
func nodeOptions(cfg config) []Option {
	opts := []Option{
		WithDialTimeout(cfg.dialTimeout),
		WithReadTimeout(cfg.readTimeout),
		WithWriteTimeout(cfg.writeTimeout),
		WithPipelineConns(cfg.pipeConns),
	}
	if cfg.password != "" {
		opts = append(opts, WithAuth(cfg.username, cfg.password))
	}
	if cfg.useTLS {
		// cfg.tls is nil (Go's defaults) or the configuration built from
		// WithTLS or the URL's tls_* parameters; an empty ServerName
		// becomes each node's own host.
		opts = append(opts, WithTLS(cfg.tls))
	}
	return opts
}

// Addr returns the seeds, comma-separated.
func (c *Cluster) Addr() string { return c.name }

// Sharded reports true: releases are announced with SPUBLISH and heard with
// SSUBSCRIBE.
func (c *Cluster) Sharded() bool { return true }

// node returns the driver of the node at addr ("host:port"), made on first
// use. Drivers are kept until Close, so a node's connections, each fresh
// until it has answered the guard's questions, live as long as the Cluster.
func (c *Cluster) node(addr string) (*Redis, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClusterClosed
	}
	if n, ok := c.nodes[addr]; ok {
		return n, nil
	}
	n, err := New(addr, c.nodeOpts...)
	if err != nil {
		return nil, fmt.Errorf("redigo: cluster node %s: %w", addr, err)
	}
	c.nodes[addr] = n
	return n, nil
}

// Close closes every node's driver. Calls waiting on them return an error
// at once, and calls after it fail.
func (c *Cluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}
