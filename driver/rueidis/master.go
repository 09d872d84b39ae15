package rueidisdriver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
)

// ErrInvalid is returned for bad arguments: a nil client, a bad option, a
// call without a script.
var ErrInvalid = errors.New("rueidisdriver: invalid argument")

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
	// calls numbers the replies without dial counts: each call may have
	// been the first on a connection rueidis had just opened, which the
	// driver cannot observe, so each counts as one (see numbered).
	calls atomic.Uint64
	dials *Dials // WithDials, or nil
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
	addr      string
	timeout   time.Duration
	owns      bool
	dials     *Dials
	withDials bool
}

// WithAddr sets the name the lock gives the master in errors and logs.
// Default: the addresses of the client's nodes, sorted and joined by ",".
func WithAddr(addr string) Option { return optionFunc(func(c *config) { c.addr = addr }) }

// WithTimeout bounds a call whose ctx has no deadline. Default
// DefaultTimeout. Must be positive.
func WithTimeout(d time.Duration) Option { return optionFunc(func(c *config) { c.timeout = d }) }

// WithCloseClient has Close close the client too. Default: Close leaves the
// client open, as it is the caller's.
func WithCloseClient() Option { return optionFunc(func(c *config) { c.owns = true }) }

// WithDials gives New the counts of the connections the client opens, as
// CountDials installed them before the client was built. Each call then
// takes a dedicated connection of the client's and carries the restart
// guard's health read only when a connection was opened since the last one,
// instead of on every call: see the package documentation. New then opens
// the first dedicated connection, within the client's dial timeout.
// Default: no counts, and every call carries the health read. Must not be
// nil.
func WithDials(d *Dials) Option {
	return optionFunc(func(c *config) { c.dials, c.withDials = d, true })
}

// New returns the master reached through client, which the caller keeps
// using as before. The client's own options (addresses, TLS, ACL user and
// password, database) are the ones the lock uses: see the package
// documentation.
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
	if c.withDials && c.dials == nil {
		bad = append(bad, "nil dial counts")
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, strings.Join(bad, "; "))
	}
	if c.addr == "" {
		c.addr = nodeAddrs(client)
	}
	m := &Master{client: client, addr: c.addr, timeout: c.timeout, owns: c.owns, dials: c.dials,
		cluster: client.Mode() == rueidis.ClientModeCluster}
	if m.dials != nil && !m.cluster {
		// Open the first dedicated connection now, as rueidis opens its
		// first pipelined one in NewClient, so that the lock's first call
		// does not wait for it. Bounded by the client's dial timeout; one
		// that fails is dialled again by the first call.
		client.Dedicated(func(dc rueidis.DedicatedClient) error {
			return dc.Do(context.Background(), dc.B().Ping().Build()).Error()
		})
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

// Addr names the master in errors and logs: see WithAddr.
func (m *Master) Addr() string { return m.addr }

// Sharded reports whether the client is a cluster client: releases are then
// announced with SPUBLISH, in the slot of the lock key's channel, and heard
// by Subscribe's sharded subscriptions on that slot's master. Through a
// standalone or Sentinel client they are announced with PUBLISH.
func (m *Master) Sharded() bool { return m.cluster }

// Close closes the client when WithCloseClient was given; otherwise it does
// nothing, and the client stays the caller's to close. Subscriptions are
// closed by their own Close.
func (m *Master) Close() error {
	if m.owns {
		m.client.Close()
	}
	return nil
}
