package redlock

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
)

// condition remembers how the last call to one master went, so that a
// master that keeps failing while a quorum carries on is reported once when
// the failure starts or changes, and once when it clears: not on every call,
// and not never. A failure that no retry fixes (a refused password, an ACL,
// a replica or a cluster member given as a master, a host that does not
// resolve) is a warning, with what would fix it; a master down or slow, which
// the quorum is there to ride out, is information.
type condition struct {
	log    *slog.Logger
	addr   string
	what   string // what fails: "master" when empty
	effect string // what that means; "its votes do not count until this clears" when empty
	obs    Observer

	mu   sync.Mutex
	kind string // "" while the master answers
}

// note records the outcome of one call. Errors that say nothing of the
// master (the caller cancelled) change nothing.
func (c *condition) note(err error) {
	if c == nil || errors.Is(err, context.Canceled) {
		return
	}
	kind := failureKind(err)
	c.mu.Lock()
	prev := c.kind
	if kind != "" && remedy(kind) == "" && remedy(prev) != "" {
		// A passing failure (a timeout, a dropped connection) of a master
		// that fails for good until its configuration changes: that is
		// still the state to report, and the warning stands.
		c.mu.Unlock()
		return
	}
	c.kind = kind
	c.mu.Unlock()
	observeCondition(c.obs, c.addr, prev, kind)
	what, effect := c.what, c.effect
	if what == "" {
		what, effect = "master", "its votes do not count until this clears"
	}
	switch {
	case kind == prev:
	case kind == "":
		c.log.Info("redlock: "+what+" answers again", "addr", c.addr, "was", prev)
	default:
		fix := remedy(kind)
		if fix == "" {
			c.log.Info("redlock: "+what+" not answering; "+effect, "addr", c.addr, "failure", kind, "err", err)
			return
		}
		c.log.Warn("redlock: "+what+" failing; "+effect, "addr", c.addr, "failure", kind, "err", err, "fix", fix)
	}
}

// clusterChange is a redirection or a CLUSTERDOWN from a Redis Cluster given
// as one node: its slots are moving or a shard is failing over, which passes,
// unlike the same reply from a cluster member given as a plain master.
type clusterChange struct{ err error }

func (e *clusterChange) Error() string { return "cluster changing: " + e.err.Error() }
func (e *clusterChange) Unwrap() error { return e.err }

// asClusterChange wraps err as a clusterChange when it is one of the replies
// a cluster gives while it changes.
func asClusterChange(err error) error {
	switch code(err) {
	case "MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN":
		return &clusterChange{err}
	}
	return err
}

// failureKind names what went wrong on a master, coarsely enough that one
// failure repeated is one kind: a Redis error's code (NOPERM, READONLY, ...),
// "no reply", "unreachable", "cluster changing", or "unresolvable host". ""
// means no failure.
func failureKind(err error) string {
	if err == nil {
		return ""
	}
	var cc *clusterChange
	if errors.As(err, &cc) {
		return "cluster changing"
	}
	if c := code(err); c != "" {
		return c
	}
	var dns *net.DNSError
	var ne net.Error
	var op *net.OpError
	var cert *tls.CertificateVerificationError
	switch {
	case errors.As(err, &dns):
		return "unresolvable host"
	case errors.As(err, &op) && op.Op == "remote error" && op.Err != nil:
		return op.Err.Error() // a TLS alert: "tls: certificate required"
	case errors.As(err, &cert):
		return "tls: certificate not trusted"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case timedOut(err):
		return "no reply"
	case errors.As(err, &ne):
		return "unreachable"
	}
	return "error"
}

// remedy says what would fix a failure of the given kind, when the kind is
// one that no retry fixes.
func remedy(kind string) string {
	switch kind {
	case "NOPERM":
		return "grant the ACL user the lock's keys and channels (see the README, Running against production Redis)"
	case "NOAUTH", "WRONGPASS":
		return "give the user and password in the address: redis://user:password@host:port"
	case "READONLY":
		return "the address is a replica; give its master's"
	case "MOVED", "ASK", "CROSSSLOT", "CLUSTERDOWN":
		return "the address is a Redis Cluster member: give the cluster as one node, redis+cluster://host:port,host:port, or a cluster client's driver"
	case "OOM":
		return "the master is out of memory under maxmemory; raise maxmemory"
	case "NOSCRIPT", "unknown command":
		return "the master refuses Lua scripts (EVAL/EVALSHA renamed, disabled or denied); allow them"
	case "unresolvable host":
		return "check the host name"
	}
	return ""
}

// permanent reports an error that no retry fixes: the master answered, and
// what it said needs its configuration or the client's to change.
func permanent(err error) bool {
	return remedy(failureKind(err)) != "" && failureKind(err) != "unresolvable host"
}
