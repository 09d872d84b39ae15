package redlock

import (
	"context"
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
	c.kind = kind
	c.mu.Unlock()
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

// failureKind names what went wrong on a master, coarsely enough that one
// failure repeated is one kind: a Redis error's code (NOPERM, READONLY, ...),
// "no reply", "unreachable", or "unresolvable host". "" means no failure.
func failureKind(err error) string {
	if err == nil {
		return ""
	}
	if c := code(err); c != "" {
		return c
	}
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dns):
		return "unresolvable host"
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
