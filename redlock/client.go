package redlock

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/quorumlock/quorumlock"
	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// Client takes locks on a quorum of N independent Redis masters. It is safe
// for concurrent use. Close it when done.
type Client struct {
	nodes   []node
	owned   []driver.Master // the drivers Close closes (see WithCloseDrivers)
	quorum  int
	o       options
	scripts *scripts.Set
	maxTTL  atomic.Int64
	hub     *hub
	// proposed is the last count proposed to the masters (see propose).
	proposed atomic.Int64

	// silentOf is c.silent, bound once: a round's fan-out takes it without
	// an allocation.
	silentOf func(i int) bool
	silenced []atomic.Bool // each master's silence as last reported to the observer

	work      *work         // operations in flight and the writes they still owe
	closing   chan struct{} // closed by Close: waiters, watchdogs and retries stop
	closeOnce sync.Once
	closeErr  error
}

// New returns a client over the given masters, each through its driver: the
// default driver's (package driver/redigo: New, NewCluster, Open), or an
// adapter of a client library. The
// masters must be independent: not replicas of each other, and each listed
// once. The drivers stay the caller's, to close after the client, unless
// WithCloseDrivers hands them to the client's Close.
//
// An odd number of masters is best: 4 masters tolerate one failure, as 3 do,
// and 6 tolerate two, as 5 do.
func New(masters []driver.Master, opts ...Option) (*Client, error) {
	if len(masters) == 0 {
		return nil, invalid("no nodes")
	}
	seen := map[string]int{}
	for i, p := range masters {
		if isNil(p) {
			return nil, invalid("node %d is nil", i)
		}
		if p.Addr() == "" { // a zero driver value, which its constructor did not make
			return nil, invalid("node %d (%T) has no address: make it with its driver's constructor", i, p)
		}
		if j, dup := seen[p.Addr()]; dup {
			return nil, invalid("nodes %d and %d are both %s; each master must be listed once", j, i, p.Addr())
		}
		seen[p.Addr()] = i
	}
	c, err := build(len(masters), opts)
	if err != nil {
		return nil, err
	}
	nodes := make([]node, len(masters))
	for i, p := range masters {
		names := c.names()
		names.PerSlot = p.Sharded() // a Redis Cluster: a floor per slot
		nodes[i] = newMaster(p, c.scripts, names, &c.o, c.guardWindow)
	}
	c.attach(nodes)
	if c.o.closeDrivers {
		c.owned = append([]driver.Master(nil), masters...)
	}
	return c, nil
}

// isNil reports a nil interface value (a master, an observer), a typed nil
// inside the interface included.
func isNil(p any) bool {
	if p == nil {
		return true
	}
	v := reflect.ValueOf(p)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// build makes a client for n masters from validated options; attach gives
// it the masters.
func build(n int, opts []Option) (*Client, error) {
	o := defaultOptions()
	for i, opt := range opts {
		if opt == nil {
			return nil, invalid("option %d is nil", i)
		}
		opt.apply(&o)
	}
	if err := o.validate(n); err != nil {
		return nil, err
	}
	c := &Client{
		quorum:  o.quorum,
		o:       o,
		scripts: scripts.New(),
		work:    newWork(),
		closing: make(chan struct{}),
	}
	if c.quorum == 0 {
		c.quorum = quorumlock.Quorum(n)
	}
	return c, nil
}

func (c *Client) attach(nodes []node) {
	c.nodes = nodes
	c.silentOf = c.silent
	c.silenced = make([]atomic.Bool, len(nodes))
	c.hub = newHub(c)
}

// NewFromAddrs returns a client over masters given as "host:port",
// redis:// and rediss:// URLs (see redigo.New), or redis+cluster:// URLs
// for a Redis Cluster as one master (see redigo.Open), each through the
// default driver, which Close closes.
func NewFromAddrs(addrs []string, opts ...Option) (*Client, error) {
	if len(addrs) == 0 {
		return nil, invalid("no nodes")
	}
	pools := make([]driver.Master, 0, len(addrs))
	closeAll := func() {
		for _, p := range pools {
			p.Close()
		}
	}
	for i, a := range addrs {
		p, err := redigo.Open(a)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("%w: node %d: %v", ErrInvalid, i, err)
		}
		pools = append(pools, p)
	}
	c, err := New(pools, append(append([]Option(nil), opts...), WithCloseDrivers())...)
	if err != nil {
		closeAll()
		return nil, err
	}
	return c, nil
}

// Close stops the client. Operations started after it return ErrClosed;
// waiters in Lock return ErrClosed; auto-extension ends, and those locks
// report ErrLockLost. Close then waits for what the client still owes the
// masters: operations in flight, the deletes a Release left running when it
// returned at a quorum, and the roll-back of a failed attempt. Each master's
// part of each of these is bounded by the node timeout, so Close waits about
// one node timeout per operation still in flight (a few for an attempt in
// the middle of its rounds), never without bound. Only then are the drivers
// closed, when the client was given them (WithCloseDrivers, NewFromAddrs).
//
// Locks still held stay on the masters until their TTL runs out: release
// them first. Close is safe beside any call in flight, and idempotent.
func (c *Client) Close() error {
	if err := c.usable(); err != nil {
		return err
	}
	c.closeOnce.Do(func() {
		idle := c.work.close()
		close(c.closing)
		c.hub.close()
		<-idle
		var errs *multierror.Error
		for _, p := range c.owned {
			if err := p.Close(); err != nil {
				errs = multierror.Append(errs, err)
			}
		}
		c.closeErr = errs.ErrorOrNil()
	})
	return c.closeErr
}

// Nodes returns how many masters the client uses; 0 for a nil Client.
func (c *Client) Nodes() int {
	if c == nil {
		return 0
	}
	return len(c.nodes)
}

// Quorum returns how many masters must agree; 0 for a nil Client.
func (c *Client) Quorum() int {
	if c == nil {
		return 0
	}
	return c.quorum
}

// usable returns an error wrapping ErrInvalid for a nil Client, or one
// that New or NewFromAddrs did not make (a zero Client), whose methods
// would otherwise fail on what only they set up.
func (c *Client) usable() error {
	switch {
	case c == nil:
		return invalid("nil client")
	case c.work == nil:
		return invalid("zero client: make it with New or NewFromAddrs")
	}
	return nil
}

// enter counts an operation that starts now as the client's work. It
// returns ErrClosed once Close has begun; otherwise the caller must call
// c.work.done when the operation ends.
func (c *Client) enter() error {
	if !c.work.enter() {
		return ErrClosed
	}
	return nil
}

// names maps lock keys to what the scripts touch, in the client's namespace.
func (c *Client) names() scripts.Names { return scripts.Names{NS: c.o.namespace} }

// touches lists the keys and channels a lock on req's key touches, and the
// ACL patterns that grant them, for an error that must say what to grant.
func (c *Client) touches(req request) string {
	nm := c.names()
	s := fmt.Sprintf("keys %s, %s, %s and %s and channel %s: grant them with ",
		nm.Lock(req.key), nm.Fence(req.key), nm.Floor(req.key), nm.Void(req.key, req.token), nm.Channel(req.key))
	if nm.NS != "" {
		return s + fmt.Sprintf("~%s* &%s*", nm.NS, nm.NS)
	}
	return s + fmt.Sprintf("~%s ~%s* &%s* (or set WithNamespace and grant ~<namespace>* &<namespace>*)",
		req.key, scripts.ReservedPrefix, scripts.ReservedPrefix)
}

// nodeTimeout is the per-master bound for a lock of this TTL: the configured
// timeout, but never more than a tenth of the TTL.
func (c *Client) nodeTimeout(ttl time.Duration) time.Duration {
	return max(min(c.o.nodeTimeout, ttl/10), time.Millisecond)
}

// guardWindow is how long a restarted master stays out of the quorum.
func (c *Client) guardWindow() time.Duration {
	if c.o.restartGuard != restartGuardAuto {
		return c.o.restartGuard
	}
	t := time.Duration(c.maxTTL.Load())
	return t + c.o.drift.Reserve(t)
}

func (c *Client) noteTTL(ttl time.Duration) {
	for {
		old := c.maxTTL.Load()
		if int64(ttl) <= old || c.maxTTL.CompareAndSwap(old, int64(ttl)) {
			return
		}
	}
}

// work counts what a client still owes the masters: the operations in
// flight and every background write they leave behind (a straggler's
// delete, a roll-back, a retake), plus the watchdogs and subscribers.
//
// Close must wait for all of it before it closes the pools, or a delete
// that could still land is abandoned. A sync.WaitGroup cannot serve: its
// Add may not race with Wait, and work in flight adds more as it goes.
// Here new operations are refused once closing has begun, and work that is
// already counted may add to it at any time, so the count can only reach
// zero once, after the last of it.
type work struct {
	mu      sync.Mutex
	n       int
	closing bool
	idle    chan struct{} // closed when closing and n is zero
	// began and ended are add and done as values made once, for every
	// fan-out's Config (see overNodes).
	began func(n int)
	ended func()
}

func newWork() *work {
	w := &work{idle: make(chan struct{})}
	w.began, w.ended = w.add, w.done
	return w
}

// enter counts a new operation. It reports false once the client is
// closing: the operation must not start.
func (w *work) enter() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return false
	}
	w.n++
	return true
}

// add counts n more pieces of work. Only work already counted may call it,
// so the count is above zero and Close is still waiting.
func (w *work) add(n int) {
	w.mu.Lock()
	w.n += n
	w.mu.Unlock()
}

// done ends one piece of work.
func (w *work) done() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n--
	if w.n == 0 && w.closing {
		close(w.idle)
	}
}

// close refuses new operations and returns a channel closed once all the
// work counted has ended.
func (w *work) close() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closing {
		w.closing = true
		if w.n == 0 {
			close(w.idle)
		}
	}
	return w.idle
}

// overMasters is a fan-out to every master that needs need yes votes, each
// master bounded by timeout.
func (c *Client) overMasters(need int, timeout time.Duration) fanout.Config {
	return c.overNodes(len(c.nodes), need, timeout)
}

// overNodes is a fan-out to n nodes that needs need yes votes, each bounded
// by timeout. Each node's part is the client's work until it returns, even
// after the fan-out has returned: Close waits for the stragglers.
func (c *Client) overNodes(n, need int, timeout time.Duration) fanout.Config {
	return fanout.Config{Nodes: n, Need: need, Timeout: timeout, Clock: c.o.clock, Began: c.work.began, Returned: c.work.ended}
}

// silent reports whether master i answers nothing at all: its last call
// got no reply within its timeout, and no call got an answer for a node
// timeout (see server). An acquisition does not hold on for such a master
// (see fanout.Config.Silent, hearOut, rollback): a master paused, or cut
// off with its connection open, would otherwise hold every contended round
// for the whole node timeout, the round's grants on the other masters in
// the way of the other contenders all along. Its requests still go out,
// and its first answer makes it one to wait for again.
func (c *Client) silent(i int) bool {
	s := c.nodes[i].silent(c.o.nodeTimeout)
	c.observeSilence(i, s)
	return s
}

// spawn runs f in the background, counted as the client's work.
func (c *Client) spawn(f func()) {
	c.work.add(1)
	go func() {
		defer c.work.done()
		f()
	}()
}

// checkKey validates the context, client and key every lock call takes.
func (c *Client) checkKey(ctx context.Context, key string) error {
	if err := c.usable(); err != nil {
		return err
	}
	switch {
	case ctx == nil:
		return invalid("nil context")
	case key == "":
		return invalid("empty key")
	case strings.HasPrefix(key, scripts.ReservedPrefix):
		return invalid("key %q uses the reserved prefix %q", key, scripts.ReservedPrefix)
	}
	return nil
}

// checkKeyTTL validates what every lock call takes, and returns the TTL as Redis
// will keep it: whole milliseconds.
func (c *Client) checkKeyTTL(ctx context.Context, key string, ttl time.Duration) (time.Duration, error) {
	if err := c.checkKey(ctx, key); err != nil {
		return 0, err
	}
	switch {
	case ttl <= 0:
		return 0, invalid("ttl %v is not positive", ttl)
	case ttl > MaxTTL:
		// With every TTL and the fence retention at most MaxTTL, each sum
		// the client makes of them (the restart guard's window, a fencing
		// counter's lifetime in milliseconds for Redis's PX) stays far
		// from overflowing.
		return 0, invalid("ttl %v is above the maximum of %v", ttl, MaxTTL)
	}
	ttl = ttl.Truncate(time.Millisecond)
	if v := quorumlock.Validity(ttl, 0, c.o.drift); ttl <= 0 || v <= 0 {
		return 0, invalid("ttl %v leaves no validity after the drift reserve of %v", ttl, c.o.drift.Reserve(ttl))
	}
	return ttl, nil
}
