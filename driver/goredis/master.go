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

// target is the server a call goes to, and how to reach it.
type target struct {
	client *redis.Client
	server string // "" for a standalone master, the node's address in a cluster
	dials  *dialCounter
	ready  *readiness
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
// New adds a hook to the client (for a cluster, to each of its node clients)
// that counts the connections it opens; see the package documentation. The
// hook stays on the client after Close.
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
	m := &Master{client: client, closeClient: c.closeClient, name: c.name}
	switch cl := client.(type) {
	case *redis.Client:
		if cl == nil {
			return nil, invalid("the client is nil")
		}
		opt := cl.Options()
		if !c.named {
			if opt.Addr == failoverAddr {
				return nil, invalid("a Sentinel failover client has no address of its own: name it with WithName, the Sentinel master's name for instance")
			}
			m.name = opt.Addr
		}
		d := &dialCounter{}
		cl.AddHook(d)
		m.single = &target{client: cl, dials: d, ready: newReadiness(opt.Protocol)}
	case *redis.ClusterClient:
		if cl == nil {
			return nil, invalid("the client is nil")
		}
		opt := cl.Options()
		if !c.named {
			m.name = "cluster(" + strings.Join(opt.Addrs, ",") + ")"
		}
		m.cluster = newCluster(cl)
	case nil:
		return nil, invalid("the client is nil")
	default:
		return nil, invalid("a %T is not supported: give a *redis.Client (one master, or a Sentinel failover client) or a *redis.ClusterClient", client)
	}
	return m, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: goredis: %s", redlock.ErrInvalid, fmt.Sprintf(format, args...))
}

// Addr returns the master's name: the client's address, the cluster's seed
// addresses, or the name given with WithName.
func (m *Master) Addr() string { return m.name }

// Sharded reports whether the client is a cluster client: releases are then
// announced with SPUBLISH, in the slot of the lock key's channel, and heard
// by Subscribe's sharded subscriptions on that slot's master. Through a
// client of one server they are announced with PUBLISH.
func (m *Master) Sharded() bool { return m.cluster != nil }

// Close waits for calls in flight, those left to finish past their deadline
// included (see Deadlines in the package documentation), and
// then closes the client if WithCloseClient was given. It leaves the
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
