package redigo

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo/internal/pipeline"
)

// Defaults. The per-node timeout of the lock algorithm is usually far shorter
// and wins; these bound connections used outside it.
const (
	DefaultDialTimeout  = time.Second
	DefaultReadTimeout  = time.Second
	DefaultWriteTimeout = time.Second
	// DefaultPipelineConns is how many connections the calls share;
	// MaxPipelineConns the most they may.
	DefaultPipelineConns = 1
	MaxPipelineConns     = 64
)

// Redis is one master, its calls sharing a pipelined connection: the
// lock's default driver (see package driver).
type Redis struct {
	addr  string
	write time.Duration // the write timeout, for a subscription's writes
	// dial opens a connection ready for commands: TLS, AUTH and SELECT
	// done, under one deadline.
	dial func(ctx context.Context) (net.Conn, error)
	pl   *pipeline.Pipeline
}

var _ driver.Master = (*Redis)(nil)

type config struct {
	addr                                   string
	dialTimeout, readTimeout, writeTimeout time.Duration
	username, password                     string
	db                                     int
	tls                                    *tls.Config
	useTLS                                 bool
	tlsOption                              bool      // WithTLS was given
	tlsParams                              TLSParams // from the URL's tls_* parameters
	pipeConns                              int
}

func defaults() config {
	return config{
		dialTimeout:  DefaultDialTimeout,
		readTimeout:  DefaultReadTimeout,
		writeTimeout: DefaultWriteTimeout,
		pipeConns:    DefaultPipelineConns,
	}
}

// New returns the driver of one Redis master. addr is "host:port", or a URL:
//
//	redis://[user[:password]@]host[:port][/db][?dial_timeout=1s&read_timeout=1s&...]
//	rediss://...   the same over TLS
//
// Query parameters: dial_timeout, read_timeout, write_timeout (Go
// durations), db, pipeline_conns (integers). Options given to New override
// what the URL says. A Redis Cluster's URL (redis+cluster://) is Open's.
//
// A rediss:// URL verifies the server's certificate against the system's
// roots and the URL's host. These parameters change that (see TLSParams),
// and a redis:// URL refuses them:
//
//	tls_ca_file=FILE       PEM file of the CAs that sign the server's certificate, instead of the system's roots
//	tls_cert_file=FILE     PEM file of a client certificate, for a server with tls-auth-clients yes (Redis's default)
//	tls_key_file=FILE      PEM file of its private key; with tls_cert_file, both or neither
//	tls_server_name=NAME   the name the server's certificate carries, if not the URL's host
//
// For example, mutual TLS to a master whose certificate names redis-1:
//
//	rediss://locker:pw@10.0.0.7:6380?tls_ca_file=/etc/redis/ca.pem&tls_cert_file=/etc/redis/client.pem&tls_key_file=/etc/redis/client.key&tls_server_name=redis-1
//
// New reads the files once, and its errors name a file that is missing or
// not what it should be. Verification cannot be turned off from a URL: an
// unverified master can be impersonated, and an impostor grants any lock.
// Give tls_* parameters or WithTLS, not both. New does not connect: the
// first call does.
func New(addr string, opts ...Option) (*Redis, error) {
	c, err := resolve(addr, opts)
	if err != nil {
		return nil, err
	}
	r := &Redis{addr: c.addr, write: c.writeTimeout, dial: dialer(c)}
	r.pl = pipeline.New(pipeline.Config{Dial: r.dial, Conns: c.pipeConns, ReadTimeout: c.readTimeout, WriteTimeout: c.writeTimeout})
	return r, nil
}

// dialer returns the function that opens a connection ready for commands:
// the TCP connection, the TLS handshake, AUTH and SELECT, all within one
// deadline, the dial timeout's or ctx's, whichever is first.
func dialer(c config) func(ctx context.Context) (net.Conn, error) {
	nd := netDialer(c)
	var hello [][]string
	if c.password != "" {
		if c.username != "" {
			hello = append(hello, []string{"AUTH", c.username, c.password})
		} else {
			hello = append(hello, []string{"AUTH", c.password})
		}
	}
	if c.db != 0 {
		hello = append(hello, []string{"SELECT", strconv.Itoa(c.db)})
	}
	return func(ctx context.Context) (net.Conn, error) {
		if c.dialTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.dialTimeout)
			defer cancel()
		}
		nc, err := nd(ctx)
		if err != nil {
			return nil, err
		}
		if len(hello) == 0 {
			return nc, nil
		}
		if err := handshake(ctx, nc, hello, c.readTimeout); err != nil {
			nc.Close()
			return nil, err
		}
		nc.SetDeadline(time.Time{}) // the caller bounds each use
		return nc, nil
	}
}

// handshake sends AUTH and SELECT in one write and reads their replies,
// within ctx, or within the read timeout when ctx has no deadline (a dial
// timeout of 0). A refused one is the master's reply, a driver.Error, so
// that its code (WRONGPASS) is read.
func handshake(ctx context.Context, nc net.Conn, hello [][]string, read time.Duration) error {
	dl, ok := ctx.Deadline()
	if !ok && read > 0 {
		dl = time.Now().Add(read)
	}
	nc.SetDeadline(dl)
	// A ctx cancelled before its deadline cuts the handshake short too.
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	err := exchange(nc, dl, hello)
	if !stop() {
		// ctx ended, and may have cut the connection's deadline short
		// whatever the exchange gave.
		return errors.Join(ctx.Err(), err)
	}
	return err
}

// exchange sends the commands and reads a reply to each; it returns the
// first error reply.
func exchange(nc net.Conn, dl time.Time, commands [][]string) error {
	conn := pipeline.NewConn(nc, 0)
	if err := conn.Send(commands...); err != nil {
		return err
	}
	var refused error
	for range commands {
		v, err := conn.Receive(dl)
		if err != nil {
			return err
		}
		if e, ok := v.(driver.Error); ok && refused == nil {
			refused = e
		}
	}
	return refused
}

// netDialer returns the function that opens the network connection,
// including the TLS handshake, within the dial's ctx.
func netDialer(c config) func(ctx context.Context) (net.Conn, error) {
	d := &net.Dialer{KeepAlive: 5 * time.Minute}
	var tlsCfg *tls.Config
	if c.useTLS {
		tlsCfg = c.tls.Clone() // nil for nil; the caller's stays unchanged
		if tlsCfg == nil {
			tlsCfg = &tls.Config{}
		}
		if tlsCfg.ServerName == "" {
			host, _, _ := net.SplitHostPort(c.addr) // resolve made c.addr host:port
			tlsCfg.ServerName = host
		}
	}
	return func(ctx context.Context) (net.Conn, error) {
		conn, err := d.DialContext(ctx, "tcp", c.addr)
		if err != nil || tlsCfg == nil {
			return conn, err
		}
		tc := tls.Client(conn, tlsCfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		return &refusalConn{Conn: tc}, nil
	}
}

// Start runs a script on the master: see driver.Master. When a connection is open and taking requests, the
// call is written from the caller's goroutine and its reply handed to done
// by the connection's reader, or at ctx's deadline, which alone bounds such
// a call; otherwise (a connection to open, a connection that dropped under
// the call, a script the master has not cached) a goroutine finishes the
// call as Eval would.
func (r *Redis) Start(ctx context.Context, call driver.Call, done driver.Done) {
	r.pl.Start(ctx, call, done)
}

// Eval runs a script on the master and waits for its outcome, as Start
// would hand it over. The call shares a connection with every other call in
// flight (see package doc). A connection found dead is replaced, and the
// call sent again, within ctx; without a deadline in ctx the read timeout
// bounds the call.
func (r *Redis) Eval(ctx context.Context, call driver.Call) (driver.Reply, error) {
	return r.pl.Eval(ctx, call)
}

// Do runs one command on the master and returns its reply in the neutral
// form of driver.Master's Eval: an integer as int64, a bulk or status string
// as string, an array as []any, a nil reply as nil. An error reply is
// returned as the error, a driver.Error. The command shares the connection
// with Eval's calls. It returns within ctx's deadline, or the read timeout
// when ctx has none. Unlike Eval it never sends a command twice.
func (r *Redis) Do(ctx context.Context, cmd string, args ...string) (any, error) {
	return r.pl.Do(ctx, append([]string{cmd}, args...)...)
}

// Sharded reports false: a Redis is one standalone master, announcing with
// PUBLISH.
func (r *Redis) Sharded() bool { return false }

// Addr returns the master's "host:port".
func (r *Redis) Addr() string { return r.addr }

// Close closes the shared connections: calls waiting on them return an
// error at once, and calls after it fail.
func (r *Redis) Close() error {
	r.pl.Close()
	return nil
}

// resolve builds the configuration New uses: the defaults, then what addr
// says, then opts, validated.
func resolve(addr string, opts []Option) (config, error) {
	c := defaults()
	if err := parseAddr(addr, &c); err != nil {
		return config{}, err
	}
	for _, o := range opts {
		if o == nil {
			return config{}, errors.New("redigo: nil option")
		}
		o.apply(&c)
	}
	if err := c.validate(); err != nil {
		return config{}, err
	}
	if !c.tlsParams.isZero() {
		cfg, err := c.tlsParams.config()
		if err != nil {
			return config{}, fmt.Errorf("redigo: address %q: %w", redact(addr), err)
		}
		c.tls = cfg
	}
	return c, nil
}

func (c *config) validate() error {
	var errs []string
	if c.addr == "" {
		errs = append(errs, "empty address")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"dial timeout", c.dialTimeout}, {"read timeout", c.readTimeout}, {"write timeout", c.writeTimeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Sprintf("%s %v is negative", d.name, d.v))
		}
	}
	if c.pipeConns < 1 || c.pipeConns > MaxPipelineConns {
		errs = append(errs, fmt.Sprintf("pipeline connections %d not in 1..%d", c.pipeConns, MaxPipelineConns))
	}
	if c.db < 0 {
		errs = append(errs, fmt.Sprintf("db %d is negative", c.db))
	}
	if c.username != "" && c.password == "" {
		errs = append(errs, "a username needs a password")
	}
	if c.tlsOption && !c.tlsParams.isZero() {
		// Whichever won would silently drop part of the other.
		errs = append(errs, "both WithTLS and the URL's tls_* parameters configure TLS: use one")
	}
	if len(errs) > 0 {
		return fmt.Errorf("redigo %q: %s", c.addr, strings.Join(errs, "; "))
	}
	return nil
}
