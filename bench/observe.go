package bench

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
)

// Observer counts the votes of every lock attempt on one key, for any
// contender, by watching the acquire commands on the wire: redsync's and the
// floor's SET key token NX PX, and quorumlock's acquire script. Each attempt
// has its own token, so votes are grouped by token; stragglers that answer
// after the attempt returned are counted too.
//
// Watching the commands rather than the library's Lock gives the same
// measure for every contender, and sees the attempts Lock makes inside.
// The cost is a map update under a mutex per acquire command, the same for
// every contender; latency scenarios do not use it.
type Observer struct {
	w       atomic.Pointer[watch]
	scripts map[string]bool // acquire scripts: source and SHA1 of each; read-only

	mu       sync.Mutex
	attempts map[string]*Attempt
	dropped  int
}

// watch is what an Observer watches: a key, and its clock's origin.
type watch struct {
	key  string
	base time.Time
}

// Attempt is one acquisition attempt as the masters answered it.
type Attempt struct {
	Start time.Duration // first acquire command sent, since the observer's base
	Yes   int           // masters that granted it
	No    int           // masters that refused it (held by someone else)
	Err   int           // masters that failed or timed out
}

// maxAttempts bounds the observer's memory; attempts beyond it are counted
// in Dropped only.
const maxAttempts = 1 << 20

// NewObserver watches attempts on key, timing them from base (the
// contention harness's clock). acquireScripts are the sources of the Lua
// scripts that acquire (quorumlock's, as the library sends it); a call of one
// of them, by EVALSHA or EVAL, whose first key is the observed key is an
// attempt, and its first argument is the attempt's token. SET key token NX
// is always one.
func NewObserver(key string, base time.Time, acquireScripts ...string) *Observer {
	o := &Observer{attempts: map[string]*Attempt{}, scripts: map[string]bool{}}
	for _, src := range acquireScripts {
		o.scripts[src] = true
		o.scripts[newScript(src, 0).sha] = true
	}
	o.w.Store(&watch{key: key, base: base})
	return o
}

// Reset forgets every attempt and watches key from now on, timing it from
// base.
func (o *Observer) Reset(key string, base time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.Store(&watch{key: key, base: base})
	o.attempts = map[string]*Attempt{}
	o.dropped = 0
}

// Attempts returns every attempt seen, in order of start.
func (o *Observer) Attempts() []Attempt {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]Attempt, 0, len(o.attempts))
	for _, a := range o.attempts {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b Attempt) int { return int(a.Start - b.Start) })
	return out
}

// Dropped returns how many attempts were not kept because of the bound.
func (o *Observer) Dropped() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.dropped
}

// acquireToken recognises an acquire command on the observed key and
// returns its token.
func (o *Observer) acquireToken(cmd string, args []any) (string, bool) {
	key := o.w.Load().key
	switch {
	case strings.EqualFold(cmd, "SET"):
		// SET key token, with NX among the options: redigo's callers send
		// NX PX ms, go-redis and rueidiscompat their own order, lower case
		// for go-redis.
		if len(args) >= 3 && args[0] == key && hasNX(args[2:]) {
			t, ok := args[1].(string)
			return t, ok
		}
	case strings.EqualFold(cmd, "EVALSHA"), strings.EqualFold(cmd, "EVAL"):
		// script, number of keys, keys, then arguments: the token first.
		if len(args) < 3 || args[2] != key {
			return "", false
		}
		script, ok := args[0].(string)
		if !ok || !o.scripts[script] {
			return "", false
		}
		n, ok := args[1].(int)
		if !ok || n < 1 || len(args) <= 2+n {
			return "", false
		}
		t, ok := args[2+n].(string)
		return t, ok
	}
	return "", false
}

// hasNX reports whether a SET's options include NX.
func hasNX(opts []any) bool {
	for _, a := range opts {
		if s, ok := a.(string); ok && strings.EqualFold(s, "NX") {
			return true
		}
	}
	return false
}

// acquireCall returns the token of a quorumlock acquire of the observed key.
func (o *Observer) acquireCall(call driver.Call) (string, bool) {
	if call.Script == nil || !o.scripts[call.Script.SHA] || len(call.Keys) == 0 || len(call.Args) == 0 {
		return "", false
	}
	if call.Keys[0] != o.w.Load().key {
		return "", false
	}
	return call.Args[0], true
}

// sent notes an acquire command going out.
func (o *Observer) sent(token string) {
	now := time.Since(o.w.Load().base)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.attempts[token] != nil {
		return
	}
	if len(o.attempts) >= maxAttempts {
		o.dropped++
		return
	}
	o.attempts[token] = &Attempt{Start: now}
}

// answered notes a master's reply to an acquire command.
func (o *Observer) answered(token string, reply any, err error) {
	yes, no := false, false
	switch r := reply.(type) {
	case string: // SET: +OK
		yes = err == nil && r == "OK"
	case []any: // quorumlock's acquire: {1, fence} or {0, holder's PTTL, holder}
		if len(r) >= 2 {
			yes, no = r[0] == int64(1), r[0] == int64(0)
		}
	case nil: // SET NX on a held key
		no = err == nil
	}
	if re, ok := err.(redis.Error); ok && strings.HasPrefix(string(re), "NOSCRIPT") {
		return // the client sends the script's source next
	}
	o.vote(token, yes, no)
}

// vote notes a master's answer to an acquire command: a yes, a no (the
// key held by someone else), or neither (an error or a timeout).
func (o *Observer) vote(token string, yes, no bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	a := o.attempts[token]
	if a == nil {
		return
	}
	switch {
	case yes:
		a.Yes++
	case no:
		a.No++
	default:
		a.Err++
	}
}

// observedConn is a redigo connection that reports acquire commands, sent
// alone or in a pipeline (quorumlock sends its health read ahead of the
// first script on a new connection).
type observedConn struct {
	redis.Conn
	o *Observer
	p *pipeline
}

// pipeline is what a connection has sent since its last flush: how many
// commands, and which of them were acquires.
type pipeline struct {
	n        int
	acquires []pendingAcquire
}

type pendingAcquire struct {
	at    int // the command's place in the pipeline
	token string
}

func newObservedConn(c redis.Conn, o *Observer) observedConn {
	return observedConn{Conn: c, o: o, p: &pipeline{}}
}

var _ redis.ConnWithTimeout = observedConn{}

func (c observedConn) Send(cmd string, args ...any) error {
	if token, ok := c.o.acquireToken(cmd, args); ok {
		c.o.sent(token)
		c.p.acquires = append(c.p.acquires, pendingAcquire{at: c.p.n, token: token})
	}
	c.p.n++
	return c.Conn.Send(cmd, args...)
}

func (c observedConn) Do(cmd string, args ...any) (any, error) {
	return c.do(cmd, args, func() (any, error) { return c.Conn.Do(cmd, args...) })
}

func (c observedConn) DoWithTimeout(d time.Duration, cmd string, args ...any) (any, error) {
	return c.do(cmd, args, func() (any, error) { return redis.DoWithTimeout(c.Conn, d, cmd, args...) })
}

// do runs one command, or flushes the pipeline when cmd is "", and reports
// the acquires among them.
func (c observedConn) do(cmd string, args []any, run func() (any, error)) (any, error) {
	token, ok := c.o.acquireToken(cmd, args)
	if ok {
		c.o.sent(token)
	}
	sent := c.p.acquires
	c.p.acquires, c.p.n = nil, 0
	r, err := run()
	if ok {
		c.o.answered(token, r, err)
	}
	if cmd == "" {
		all, _ := r.([]any)
		for _, a := range sent {
			switch {
			case err != nil:
				c.o.answered(a.token, nil, err)
			case a.at < len(all):
				reply, rerr := all[a.at], error(nil)
				if e, isErr := reply.(redis.Error); isErr {
					reply, rerr = nil, e
				}
				c.o.answered(a.token, reply, rerr)
			}
		}
	}
	return r, err
}

func (c observedConn) ReceiveWithTimeout(d time.Duration) (any, error) {
	return redis.ReceiveWithTimeout(c.Conn, d)
}

// ObservedMaster is a quorumlock driver, any of them, whose acquire scripts
// are reported to an Observer. Its subscriptions are the wrapped driver's,
// unobserved.
type ObservedMaster struct {
	M driver.Master
	O *Observer
}

var _ driver.Master = ObservedMaster{}

// Start starts the call on the wrapped driver, reporting it when it is an
// acquire of the observed key.
func (m ObservedMaster) Start(ctx context.Context, call driver.Call, done driver.Done) {
	token, ok := m.O.acquireCall(call)
	if !ok {
		m.M.Start(ctx, call, done)
		return
	}
	m.O.sent(token)
	m.M.Start(ctx, call, driver.DoneFunc(func(rep driver.Reply, err error) {
		m.O.answered(token, rep.Value, err)
		done.Returned(rep, err)
	}))
}

// Subscribe opens an unobserved subscription.
func (m ObservedMaster) Subscribe(ctx context.Context) (driver.Subscription, error) {
	return m.M.Subscribe(ctx)
}

// Addr returns the master's address.
func (m ObservedMaster) Addr() string { return m.M.Addr() }

// Sharded reports whether the wrapped driver announces with sharded pub/sub.
func (m ObservedMaster) Sharded() bool { return m.M.Sharded() }

// Close closes the wrapped driver.
func (m ObservedMaster) Close() error { return m.M.Close() }

// ObservedRedigoPool is a redigo pool, as redsync's adapter takes it, whose
// connections report acquire commands to an Observer.
type ObservedRedigoPool struct {
	P *redis.Pool
	O *Observer
}

var _ RedigoPool = ObservedRedigoPool{}

// Get returns an observed connection.
func (p ObservedRedigoPool) Get() redis.Conn { return newObservedConn(p.P.Get(), p.O) }

// GetContext returns an observed connection.
func (p ObservedRedigoPool) GetContext(ctx context.Context) (redis.Conn, error) {
	c, err := p.P.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	return newObservedConn(c, p.O), nil
}

// goRedisObserver is a go-redis hook that reports acquire commands (SET
// key token … NX) to an Observer, as redsync's go-redis adapter sends
// them: each alone, not in a pipeline.
type goRedisObserver struct{ o *Observer }

var _ goredis.Hook = goRedisObserver{}

func (h goRedisObserver) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h goRedisObserver) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		args := cmd.Args()
		if len(args) == 0 {
			return next(ctx, cmd)
		}
		name, _ := args[0].(string)
		token, ok := h.o.acquireToken(name, args[1:])
		if !ok {
			return next(ctx, cmd)
		}
		h.o.sent(token)
		err := next(ctx, cmd)
		// SET … NX is a *goredis.BoolCmd: true when set, false (and no
		// error) when the key was held.
		b, isBool := cmd.(*goredis.BoolCmd)
		h.o.vote(token, err == nil && isBool && b.Val(), err == nil && isBool && !b.Val())
		return err
	}
}

func (h goRedisObserver) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// observeGoRedis has a go-redis client report its acquire commands to o.
// Call it before the client's first command.
func observeGoRedis(c *goredis.Client, o *Observer) { c.AddHook(goRedisObserver{o}) }

// ObservedRueidis is a rueidis client that reports acquire commands (SET
// key token … NX) sent through Do or DoMulti to an Observer, as redsync's
// rueidis adapter (over rueidiscompat) sends them.
type ObservedRueidis struct {
	rueidis.Client
	O *Observer
}

func (c ObservedRueidis) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	token, ok := c.acquireToken(cmd)
	if !ok {
		return c.Client.Do(ctx, cmd)
	}
	c.O.sent(token)
	r := c.Client.Do(ctx, cmd)
	c.answered(token, r)
	return r
}

func (c ObservedRueidis) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	var tokens []string // as multi, "" for a command that is no acquire
	for i, cmd := range multi {
		if token, ok := c.acquireToken(cmd); ok {
			if tokens == nil {
				tokens = make([]string, len(multi))
			}
			tokens[i] = token
			c.O.sent(token)
		}
	}
	rs := c.Client.DoMulti(ctx, multi...)
	for i, token := range tokens {
		if token != "" && i < len(rs) {
			c.answered(token, rs[i])
		}
	}
	return rs
}

// acquireToken recognises SET key token … NX on the observed key. Only
// such a SET is turned into the Observer's []any form, so that other
// commands cost no allocation.
func (c ObservedRueidis) acquireToken(cmd rueidis.Completed) (string, bool) {
	parts := cmd.Commands()
	if len(parts) < 4 || !strings.EqualFold(parts[0], "SET") || parts[1] != c.O.w.Load().key {
		return "", false
	}
	args := make([]any, len(parts)-1)
	for i, p := range parts[1:] {
		args[i] = p
	}
	return c.O.acquireToken(parts[0], args)
}

// answered notes a SET NX's reply: OK when set, nil when the key was held.
func (c ObservedRueidis) answered(token string, r rueidis.RedisResult) {
	err := r.Error()
	if rueidis.IsRedisNil(err) {
		c.O.vote(token, false, true)
		return
	}
	s, serr := r.ToString()
	c.O.vote(token, err == nil && serr == nil && s == "OK", false)
}
