package goredis

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/redlock"
)

var _ driver.Master = (*Master)(nil)

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("goredis: master closed")

// failoverAddr is the address go-redis gives a Sentinel failover client's
// options: the master it reaches changes with each failover.
const failoverAddr = "FailoverClient"

// Master is one Redis master, or one Redis Cluster, reached through a go-redis
// client that the application already has: a driver.Master for the lock.
// Its methods are safe for concurrent use.
type Master struct {
	name        string
	client      redis.UniversalClient
	closeClient bool

	// Exactly one of single and cluster is set.
	single  *target  // a standalone or failover client: one server
	cluster *cluster // a cluster client: the master of each key's slot

	mu       sync.RWMutex // guards closed against inflight.Add
	closed   bool
	inflight sync.WaitGroup // calls, and those left to finish past their deadline
}

// New returns the master that client reaches. The client is used as given,
// with its own address, TLS, ACL user and password, database, pool and
// timeouts: see the package documentation for what they mean for the lock.
//
// client must be a *redis.Client (one server, or a Sentinel failover
// client, which needs WithName) or a *redis.ClusterClient. A nil client, a
// nil option, an empty WithName, or another kind of client (a *redis.Ring,
// whose keys move between shards when one is down) is an error matching
// redlock.ErrInvalid.
//
// New opens nothing: the master's connections are taken from the client's
// pool as calls come (see the package documentation).
func New(client redis.UniversalClient, opts ...Option) (*Master, error) {
	var c config
	for i, o := range opts {
		if o == nil {
			return nil, invalid("option %d is nil", i)
		}
		o.apply(&c)
	}
	if c.named && c.name == "" {
		return nil, invalid("WithName: the name is empty")
	}
	m, err := newMaster(client, c)
	if err != nil {
		return nil, invalid("%v", err)
	}
	return m, nil
}

// newMaster is New after the options; its error says what is wrong with
// client, for the caller to wrap in redlock.ErrInvalid.
func newMaster(client redis.UniversalClient, c config) (*Master, error) {
	m := &Master{client: client, closeClient: c.closeClient, name: c.name}
	switch cl := client.(type) {
	case *redis.Client:
		if cl == nil {
			return nil, errors.New("the client is nil")
		}
		opt := cl.Options()
		if !c.named {
			if opt.Addr == failoverAddr {
				return nil, errors.New("a Sentinel failover client has no address of its own: name it with WithName, the Sentinel master's name for instance")
			}
			m.name = opt.Addr
		}
		m.single = newTarget(m, cl, "", false)
	case *redis.ClusterClient:
		if cl == nil {
			return nil, errors.New("the client is nil")
		}
		opt := cl.Options()
		if !c.named {
			m.name = "cluster(" + strings.Join(opt.Addrs, ",") + ")"
		}
		m.cluster = newCluster(m, cl)
	case nil:
		return nil, errors.New("the client is nil")
	default:
		return nil, fmt.Errorf("a %T is not supported: give a *redis.Client (one master, or a Sentinel failover client) or a *redis.ClusterClient", client)
	}
	return m, nil
}

// NewClient returns a lock client over one master per go-redis client, as
// New makes them with no options: each client's own address names its
// master, and a *redis.ClusterClient is one master. A Sentinel failover
// client has no address: build its master with New and WithName, and give
// the masters to redlock.New.
//
// Closing the lock client closes the masters, not the go-redis clients,
// which stay the application's. A bad client (see New) or a bad option
// (see redlock.New) is an error matching redlock.ErrInvalid; the masters
// already built are then closed.
func NewClient(clients []redis.UniversalClient, opts ...redlock.Option) (*redlock.Client, error) {
	masters := make([]driver.Master, 0, len(clients))
	closeAll := func() {
		for _, m := range masters {
			m.Close()
		}
	}
	for i, client := range clients {
		m, err := newMaster(client, config{})
		if err != nil {
			closeAll()
			return nil, invalid("client %d: %v", i, err)
		}
		masters = append(masters, m)
	}
	c, err := redlock.New(masters, append(append([]redlock.Option(nil), opts...), redlock.WithCloseDrivers())...)
	if err != nil {
		closeAll()
		return nil, err
	}
	return c, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: goredis: %s", driver.ErrInvalid, fmt.Sprintf(format, args...))
}

// Addr returns the master's name: the client's address, the cluster's seed
// addresses, or the name given with WithName.
func (m *Master) Addr() string { return m.name }

// Sharded reports whether the client is a cluster client: releases are then
// announced with SPUBLISH, in the slot of the lock key's channel, and heard
// by Subscribe's sharded subscriptions on that slot's master. Through a
// client of one server they are announced with PUBLISH.
func (m *Master) Sharded() bool { return m.cluster != nil }

// Close waits for calls in flight, and for batches left to finish past
// their callers' deadlines (see Deadlines in the package documentation),
// gives the master's connections back to the client's pool, and then
// closes the client if WithCloseClient was given. It leaves the
// client open otherwise. Subscriptions stay open until closed. Calls made
// after Close return ErrClosed. Close is idempotent.
func (m *Master) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	m.inflight.Wait()
	if m.single != nil {
		m.single.close()
	} else {
		m.cluster.close()
	}
	if m.closeClient {
		return m.client.Close()
	}
	return nil
}

// enter counts a call in flight, or returns ErrClosed. The caller calls
// m.inflight.Done when the call ends.
func (m *Master) enter() error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return ErrClosed
	}
	m.inflight.Add(1)
	return nil
}
