package redlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/quorumlock/quorumlock/driver"
)

var (
	// ErrNotObtained means no quorum of masters granted the lock in time, or
	// the validity left after the attempt was not positive. Nothing of the
	// attempt is left behind on any master that could be reached.
	ErrNotObtained = errors.New("redlock: lock not obtained")

	// ErrLockNotHeld means the operation found no master still holding the
	// lock's token: it was released already, or it expired. From Resume, it
	// means fewer than a quorum of the masters whose votes count hold it,
	// or no validity was left.
	ErrLockNotHeld = errors.New("redlock: lock not held")

	// ErrLockLost means the lock ended while its holder still believed in
	// it: an extension could not reach a quorum before the validity ran out,
	// or the keys were found gone. Whatever the holder did after the loss may
	// overlap with the next holder; fencing tokens let the resource tell.
	ErrLockLost = errors.New("redlock: lock lost")

	// ErrClosed means the Client was closed.
	ErrClosed = errors.New("redlock: client closed")

	// ErrInvalid marks bad input: an empty key, a TTL too short for the
	// drift reserve, an out-of-range option. The error's text names the
	// value. It is driver.ErrInvalid, which the drivers' refusals match too.
	ErrInvalid = driver.ErrInvalid
)

// ErrQuarantined comes inside ErrNotObtained (or, from Resume, inside
// ErrLockNotHeld) when masters that granted the lock (that hold the token)
// were kept from voting by the restart guard, and their votes would have
// made the quorum: they restarted, or were promoted, less than the
// guard window ago, or cannot be trusted at all (a replica, an evicting
// master, one whose state cannot be read). It is not contention: nobody need
// hold the key. On masters started a moment ago, TryLock fails this way for
// one window and Lock waits it out; one long TTL widens the window for the
// whole client (see WithRestartGuard). The error's text says when the first
// of them votes; its *AttemptError says, for each, why.
var ErrQuarantined = errors.New("redlock: masters in restart quarantine")

// ErrMisconfigured comes inside ErrNotObtained when so many masters refuse
// the lock's commands in a way no retry fixes (NOPERM, NOAUTH or WRONGPASS,
// READONLY, MOVED or CROSSSLOT, OOM, scripting denied) that no quorum is
// possible without them. Lock and Do then return at once instead of waiting
// for ever. The error's text names the failure and the fix in brief; its
// *AttemptError's Fix names the keys and channels involved, and each
// master's *NodeError is wrapped too.
var ErrMisconfigured = errors.New("redlock: masters misconfigured for locking")

// ErrHeld is one master's refusal: the key is held there by another owner.
// It comes wrapped in a *NodeError inside ErrNotObtained, and tells a
// contended key apart from masters that could not be reached.
var ErrHeld = errors.New("redlock: held by another owner")

// NodeError is what went wrong on one master. An error about several
// masters (an *AttemptError) wraps one *NodeError for each, in the order of
// the masters: errors.Is matches a cause on any of them, and errors.As finds
// the first.
type NodeError struct {
	Node int    // index of the master in the list given to New
	Addr string // its address
	Err  error  // what happened there
}

// Error names the master, by index and address, and what happened there.
func (e *NodeError) Error() string {
	cause := "<nil>"
	if e.Err != nil {
		cause = strings.TrimPrefix(e.Err.Error(), "redlock: ")
	}
	return fmt.Sprintf("redlock: node %d (%s): %s", e.Node, e.Addr, cause)
}

// Unwrap returns what happened on the master, for errors.Is and errors.As.
func (e *NodeError) Unwrap() error { return e.Err }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// nodeErr is master i's part of an error. Errors about several masters
// are *AttemptError values, whose Unwrap lists each master's *NodeError.
func (c *Client) nodeErr(i int, err error) error {
	if timedOut(err) && !errors.Is(err, errNoReply) {
		err = fmt.Errorf("%w: %w", errNoReply, err)
	}
	return &NodeError{Node: i, Addr: c.nodes[i].addr(), Err: err}
}

// timedOut reports a deadline reached while waiting on a master.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

var errNoReply = errors.New("no reply within the node timeout")

// errTrailUnsure is a hand-over's answer from a master where a request of
// the lock it takes over got no reply: that request may still land, so the
// hand-over is not sent there, and the lock is released there instead.
var errTrailUnsure = errors.New("not handed over here: a request of the lock being handed over got no reply and may still land")

// code returns the code of a master's error reply (NOPERM, READONLY, ...),
// or "" for any other error.
func code(err error) string {
	if err == nil {
		return ""
	}
	var e driver.Error
	if errors.As(err, &e) {
		if strings.HasPrefix(string(e), "ERR unknown command") {
			return "unknown command"
		}
		return e.Code()
	}
	return ""
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
