package rueidisdriver

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
)

// ErrInvalid is returned for bad arguments: a nil client, a bad option, a
// call without a script. It is driver.ErrInvalid, as redlock.ErrInvalid is.
var ErrInvalid = driver.ErrInvalid

// DefaultTimeout bounds a call whose ctx has no deadline. The lock always
// gives one, its per-node timeout, which is usually far shorter.
const DefaultTimeout = time.Second

// Master is one Redis master reached through a rueidis client the caller
// already has: see the package documentation. It implements driver.Master.
type Master struct {
	client  rueidis.Client
	addr    string
	timeout time.Duration
	owns    bool // Close closes the client
	// one is the lock's connection to a standalone or Sentinel master;
	// lines those to a cluster's shard masters (see line).
	one   line
	lines lines
	// cluster: the client is a Redis Cluster client, and slots its map.
	cluster bool
	slots   slotMap
}

var _ driver.Master = (*Master)(nil)

// Option configures a Master built by New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	name    string
	named   bool
	timeout time.Duration
	owns    bool
}

// WithName sets the name the lock gives the master in errors and logs, and
// by which it tells masters apart (each must be listed once). Default: the
// addresses of the client's nodes, sorted and joined by ",". Must not be
// empty.
func WithName(name string) Option {
	return optionFunc(func(c *config) { c.name, c.named = name, true })
}

// WithTimeout bounds a call whose ctx has no deadline. Default
// DefaultTimeout. Must be positive.
func WithTimeout(d time.Duration) Option { return optionFunc(func(c *config) { c.timeout = d }) }

// WithCloseClient has Close close the client too. Default: Close leaves the
// client open, as it is the caller's.
func WithCloseClient() Option { return optionFunc(func(c *config) { c.owns = true }) }

// New returns the master reached through client, which the caller keeps
// using as before. The client's own options (addresses, TLS, ACL user and
// password, database) are the ones the lock uses: see the package
// documentation. A standalone or Sentinel master's connection is opened
// in the background, so that the lock's first call seldom waits for it.
func New(client rueidis.Client, opts ...Option) (*Master, error) {
	c := config{timeout: DefaultTimeout}
	var bad []string
	if client == nil {
		bad = append(bad, "nil client")
	}
	for _, o := range opts {
		if o == nil {
			bad = append(bad, "nil option")
			continue
		}
		o.apply(&c)
	}
	if c.timeout <= 0 {
		bad = append(bad, fmt.Sprintf("timeout %v is not positive", c.timeout))
	}
	if c.named && c.name == "" {
		bad = append(bad, "empty name")
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%w: rueidisdriver: %s", ErrInvalid, strings.Join(bad, "; "))
	}
	if c.name == "" {
		c.name = nodeAddrs(client)
	}
	m := &Master{client: client, addr: c.name, timeout: c.timeout, owns: c.owns,
		cluster: client.Mode() == rueidis.ClientModeCluster}
	if !m.cluster {
		m.one.open(client)
	}
	return m, nil
}

// nodeAddrs names the client's nodes.
func nodeAddrs(client rueidis.Client) string {
	nodes := client.Nodes()
	addrs := make([]string, 0, len(nodes))
	for a := range nodes {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	return strings.Join(addrs, ",")
}

// Addr names the master in errors and logs: see WithName.
func (m *Master) Addr() string { return m.addr }

// Sharded reports whether the client is a cluster client: releases are then
// announced with SPUBLISH, in the slot of the lock key's channel, and heard
// by Subscribe's sharded subscriptions on that slot's master. Through a
// standalone or Sentinel client they are announced with PUBLISH.
func (m *Master) Sharded() bool { return m.cluster }

// Close gives the lock's connections back to the client, and closes the
// client when WithCloseClient was given; otherwise the client stays the
// caller's to close. Subscriptions are closed by their own Close.
func (m *Master) Close() error {
	m.one.close()
	m.lines.close()
	if m.owns {
		m.client.Close()
	}
	return nil
}
