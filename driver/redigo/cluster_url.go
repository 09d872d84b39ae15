package redigo

import (
	"fmt"
	"strings"

	"github.com/quorumlock/quorumlock/driver"
)

// Open returns the driver for one master of the lock as addr names it: a
// Cluster for a Redis Cluster URL, and otherwise a Redis, as New reads addr.
// A cluster URL lists seed nodes, comma-separated, with what a redis:// or
// rediss:// URL takes besides (user, password, tls_* and timeout
// parameters, which apply to every node):
//
//	redis+cluster://[user[:password]@]host:port,host:port[,...][?params]
//	rediss+cluster://...   the same over TLS
//
// A database is refused, as a cluster has only database 0.
func Open(addr string, opts ...Option) (driver.Master, error) {
	seeds, ok, err := clusterSeeds(addr)
	if err != nil {
		return nil, err
	}
	if ok {
		return NewCluster(seeds, opts...)
	}
	return New(addr, opts...)
}

// clusterSeeds splits a cluster URL into one redis:// or rediss:// URL per
// seed, each with the user information and the parameters; ok is false for
// an address that is not a cluster URL.
func clusterSeeds(addr string) (seeds []string, ok bool, err error) {
	addr = strings.TrimSpace(addr)
	scheme, rest, found := strings.Cut(addr, "://")
	if !found {
		return nil, false, nil
	}
	base, isCluster := strings.CutSuffix(strings.ToLower(scheme), "+cluster")
	if !isCluster {
		return nil, false, nil
	}
	if base != "redis" && base != "rediss" {
		return nil, false, fmt.Errorf("redigo: address %q: scheme %q is not redis+cluster or rediss+cluster", redact(addr), scheme)
	}
	// The user information ends at the last '@' (parseURL refuses a '/',
	// '?' or '#' before it); the hosts end where the path or query starts.
	user := ""
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		user, rest = rest[:at+1], rest[at+1:]
	}
	hosts, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		hosts, tail = rest[:i], rest[i:]
	}
	for i, h := range strings.Split(hosts, ",") {
		if strings.TrimSpace(h) == "" {
			return nil, false, fmt.Errorf("redigo: address %q: seed %d of the cluster has no host", redact(addr), i)
		}
		seeds = append(seeds, base+"://"+user+h+tail)
	}
	return seeds, true, nil
}
