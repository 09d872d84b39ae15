// Package driver is the seam between the lock and a Redis client library:
// the little the lock needs from one master, in the lock's own terms. The
// default driver (driver/redigo) implements it with its own RESP client;
// adapters for other client libraries implement it over theirs.
//
// A Master runs the lock's Lua scripts (Start), reads the master's health
// for the restart guard on the same connection as a script when asked to
// (Check), and opens subscriptions for release announcements (Subscribe).
// Replies come back in one neutral form whatever the client library: see
// Start. Start hands a reply over when it comes, so that the lock fans a
// call out to its masters without a goroutine per master; a driver whose
// client library only blocks runs its call in a goroutine of its own.
// Eval is Start for a caller that waits.
package driver

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"
)

// Master is one Redis master as the lock uses it. Its methods are safe for
// concurrent use.
type Master interface {
	// Addr names the master in errors and logs, e.g. "10.0.0.7:6379".
	Addr() string

	// Start runs call's script on the master, by its digest (EVALSHA), and
	// by its source (EVAL) on the same connection when the master does not
	// have it cached (NOSCRIPT), and calls done.Returned exactly once with
	// the outcome, within ctx's deadline. That call may come from any
	// goroutine, before Start returns or later; it must not block, for it
	// may run on the goroutine that reads the connection's replies, beyond
	// starting other calls (the lock starts a release from the done of the
	// acquire it follows), whose writes their own deadlines bound. ctx must
	// have a deadline; Start may let a call run to its reply or that
	// deadline after ctx is cancelled.
	//
	// When call.Check returns a check that is due on the connection that
	// carries the call (see Check.Due), the driver sends its questions ahead
	// of the script on that connection, in the same round trip, to the same
	// server, and returns their answers. A connection is fresh until a call
	// that carried the questions because it was fresh has returned their
	// answers, done.Returned included: the lock judges that call's vote, and
	// every later one on the connection, by what the answers told it, so it
	// must have taken them before a call goes without questions. A call whose
	// check asks always leaves the connection as it was: its questions need
	// not be the restart guard's.
	//
	// Replies are given in the neutral form: an integer reply as int64, a
	// bulk or status string as string, an array as []any of these, a nil
	// reply as nil, and an error reply inside an array as Error. An error
	// reply to the script itself is returned as the error, an Error. Other
	// errors (network, timeouts) are returned as the client library gives
	// them, wrapped or not.
	//
	// A connection that turns out dead when first used (the master restarted
	// since it was opened) is replaced within ctx, and Reply.Lost says so.
	Start(ctx context.Context, call Call, done Done)

	// Sharded reports whether releases are announced with sharded pub/sub
	// (SPUBLISH, in the channel's slot), as the subscriptions of Subscribe
	// hear them (SSUBSCRIBE on each channel's shard): true for a Redis
	// Cluster driver that subscribes per shard. Otherwise the lock announces
	// with PUBLISH, which a Redis Cluster also carries to every node.
	Sharded() bool

	// Subscribe opens a connection of its own for release announcements.
	// It returns within ctx's deadline; the subscription lives until Closed.
	Subscribe(ctx context.Context) (Subscription, error)

	// Close releases what the driver holds for the master.
	Close() error
}

// Eval runs call on m through Start and waits for its outcome: for a
// caller with nothing else to do meanwhile.
func Eval(ctx context.Context, m Master, call Call) (Reply, error) {
	w := &waiter{got: make(chan struct{})}
	m.Start(ctx, call, w)
	<-w.got
	return w.rep, w.err
}

// waiter is Eval's Done.
type waiter struct {
	rep Reply
	err error
	got chan struct{}
}

func (w *waiter) Returned(rep Reply, err error) {
	w.rep, w.err = rep, err
	close(w.got)
}

// Done takes what a started call returned (see Master.Start). It is an
// interface rather than a function so that a caller can hand over a
// pointer to state it keeps anyway, with nothing allocated per call;
// DoneFunc makes a function one.
type Done interface {
	// Returned takes the call's reply, or why it failed.
	Returned(rep Reply, err error)
}

// DoneFunc is a function as a Done.
type DoneFunc func(rep Reply, err error)

// Returned calls f.
func (f DoneFunc) Returned(rep Reply, err error) { f(rep, err) }

// Script is one Lua script of the lock.
type Script struct {
	Name string // for errors and logs
	Src  string // the Lua source, as EVAL takes it
	SHA  string // hex SHA1 of Src, as EVALSHA takes it
	// TakesHint: the script's last argument is the master's identity as the
	// restart guard knows it (see Check.Hint and Call.Argv).
	TakesHint bool
}

// NewScript returns the script with the given name and source.
func NewScript(name, src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{Name: name, Src: src, SHA: hex.EncodeToString(sum[:])}
}

// Call is one run of a script on a master.
type Call struct {
	// Script is what runs.
	Script *Script
	// Keys are the script's keys. On a Redis Cluster they share one hash
	// slot, and the call goes to the master that owns it.
	Keys []string
	// Args are the script's arguments; see Argv for those sent.
	Args []string
	// Check, when not nil, returns the restart guard's health read for the
	// server the call goes to: "" for a standalone master, the address of
	// the slot's master on a cluster. The driver calls it once it has the
	// connection, and sends its questions when they are due (Check.Due).
	Check func(server string) *Check
}

// Check is the restart guard's part of a call: a few plain commands sent
// ahead of the script on the same connection, when the connection is new
// to the guard: it may lead to another server process than the last
// answers came from.
type Check struct {
	// Questions are the commands, each as its name and arguments.
	Questions [][]string
	// Ask, when Questions is nil, returns them: questions that cost
	// something to build are built only when they are due. See Commands.
	Ask func() [][]string
	// Always asks on any connection, fresh or not; its answers leave the
	// connection as fresh as it was (see Master.Start).
	Always bool
	// Hint is the last argument of a script that takes one, when the
	// questions are not sent. When they are, that argument is "": the
	// connection may reach another server than the one the hint describes.
	// See Call.Argv.
	Hint string
}

// Commands returns the questions to send: Questions, or else what Ask
// returns. A driver calls it only once Due says they go with the call.
func (c *Check) Commands() [][]string {
	if c.Questions == nil && c.Ask != nil {
		return c.Ask()
	}
	return c.Questions
}

// Due reports whether the questions go with a call on a connection that
// is fresh, or not: a connection is fresh until the answers of a call that
// carried the questions on it have been returned (see Master.Start).
func (c *Check) Due(fresh bool) bool {
	return c != nil && (c.Always || fresh)
}

// Argv returns the script's arguments as sent: Args and, for a script that
// takes a hint, Hint's.
func (c Call) Argv(check *Check, asked bool) []string {
	if !c.Script.TakesHint {
		return c.Args
	}
	out := make([]string, len(c.Args)+1)
	copy(out, c.Args)
	out[len(c.Args)] = c.Hint(check, asked)
	return out
}

// Hint returns the last argument sent to a script that takes a hint: the
// hint of check, or "" when check is nil or its questions go with the call
// (asked).
func (c Call) Hint(check *Check, asked bool) string {
	if check != nil && !asked {
		return check.Hint
	}
	return ""
}

// Reply is a master's answer to a Call.
type Reply struct {
	// Value is the script's reply, in the neutral form (see Master.Start).
	Value any
	// Answers holds the replies to the check's questions, in order, when
	// they were sent (nil when not). An answer may be an Error: a command
	// the master's ACL denies, for instance.
	Answers []any
	// Server is the server the call went to, as given to Call.Check.
	Server string
	// Lost reports that a connection was found dead and replaced.
	Lost bool
}

// ErrInvalid marks bad input, to the lock or to a driver: a nil client, an
// option out of range, a call without a script. It is redlock.ErrInvalid,
// so that a driver marks its own refusals without importing the lock.
var ErrInvalid = errors.New("redlock: invalid argument")

// Refused reports whether err, why a dial failed or why a connection ended
// before it served a call, shows the server refusing connections: an error
// reply to the connection's setup (a password missing or wrong, maxclients
// reached), or a connection it closed. A driver spaces its dials to such a
// server rather than dial it at every call. A timeout (a server hung or
// slow, which a driver meets otherwise), a dial refused because nothing
// listens (a redial costs the server nothing, and reaches it as soon as it
// listens again) and the end of the caller's ctx do not count.
func Refused(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	var ne net.Error
	return !errors.As(err, &ne) || !ne.Timeout()
}

// Refusals spaces the dials to a server that refuses connections (see
// Refused), so that it is not dialled at every call: after a refusal the
// next dial waits 50 ms, and after each further one twice as long, up to
// 1 s, until a connection serves a call. The calls meanwhile fail at once
// with the last refusal. Its zero value holds no dial. A driver keeps one
// per server, under a lock of its own.
type Refusals struct {
	n     int // refusals in a row
	until time.Time
	err   error
}

// Spacing of the dials after refusals (see Refusals).
const (
	minRefusalWait = 50 * time.Millisecond
	maxRefusalWait = time.Second
)

// Add counts a refusal, err, at now.
func (r *Refusals) Add(err error, now time.Time) {
	wait := minRefusalWait << min(r.n, 10)
	r.n++
	r.until, r.err = now.Add(min(wait, maxRefusalWait)), err
}

// Served ends the spacing: a connection served a call.
func (r *Refusals) Served() { r.n = 0 }

// Held returns the last refusal while no dial may go at now, or nil when
// one may.
func (r *Refusals) Held(now time.Time) error {
	if r.n > 0 && now.Before(r.until) {
		return r.err
	}
	return nil
}

// Stale reports the errors of a connection that died under a call or
// before it, as after a master restart, whatever the client library: a
// fresh connection may well succeed. A master's reply (an Error) and a
// timeout are not stale. A driver adds what its library alone returns.
func Stale(err error) bool {
	var de Error
	if errors.As(err, &de) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}

// Error is an error reply of the master, such as "NOPERM ..." or
// "READONLY ...".
type Error string

// Error returns the reply as the master gave it.
func (e Error) Error() string { return string(e) }

// Code returns the error's first word, such as NOPERM, READONLY or ERR.
func (e Error) Code() string {
	code, _, _ := strings.Cut(string(e), " ")
	return code
}

// Subscription is a connection subscribed to release announcements. Its
// Subscribe and Unsubscribe may be called while another goroutine waits in
// Receive; Close ends a waiting Receive with an error.
type Subscription interface {
	// Subscribe asks for announcements on the channels. The master confirms
	// each through Receive.
	Subscribe(channels ...string) error
	// Unsubscribe stops them. The master confirms each through Receive.
	Unsubscribe(channels ...string) error
	// Receive waits for the next announcement or confirmation.
	Receive() (Message, error)
	// Close closes the connection.
	Close() error
}

// Message is an event on a subscription.
type Message struct {
	Kind    Kind   // what happened
	Channel string // on which channel
	Payload string // what was announced, for Published; "" otherwise
}

// Kind is what a Message reports.
type Kind int8

const (
	// Published is an announcement on Channel.
	Published Kind = iota
	// Subscribed confirms a subscription to Channel.
	Subscribed
	// Unsubscribed confirms that Channel is no longer subscribed.
	Unsubscribed
)
