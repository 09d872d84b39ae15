package redigo

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Defaults. The per-node timeout of the lock algorithm is usually far shorter
// and wins; these bound connections used outside it.
const (
	DefaultDialTimeout  = time.Second
	DefaultReadTimeout  = time.Second
	DefaultWriteTimeout = time.Second
	DefaultMaxIdle      = 64
	DefaultMaxActive    = 0 // no limit
	DefaultIdleTimeout  = 5 * time.Minute
	// DefaultPipeline: calls share a pipelined connection (see
	// WithPipeline, which gives the measurements that chose it).
	DefaultPipeline = true
	// DefaultPipelineConns is how many connections the pipelined mode
	// shares; MaxPipelineConns the most it may.
	DefaultPipelineConns = 1
	MaxPipelineConns     = 64
)

// Redis is one master over a redigo connection pool: the lock's default
// driver (see package driver).
type Redis struct {
	addr        string
	readTimeout time.Duration // bounds a call whose ctx has no deadline
	pool        *redis.Pool
	dial        func(ctx context.Context) (redis.Conn, error)
	// dialNet is dial that also stores the network connection under the
	// redigo one in *capture (when not nil), for a pipe to use directly.
	dialNet func(ctx context.Context, capture *net.Conn) (redis.Conn, error)
	dials   atomic.Uint64
	pl      *pipeline // nil in the pooled mode
}

type config struct {
	addr                                   string
	dialTimeout, readTimeout, writeTimeout time.Duration
	maxIdle, maxActive                     int
	idleTimeout                            time.Duration
	username, password                     string
	db                                     int
	tls                                    *tls.Config
	useTLS                                 bool
	tlsOption                              bool      // WithTLS was given
	tlsParams                              TLSParams // from the URL's tls_* parameters
	pipeline                               bool
	pipeConns                              int
}

func defaults() config {
	return config{
		dialTimeout:  DefaultDialTimeout,
		readTimeout:  DefaultReadTimeout,
		writeTimeout: DefaultWriteTimeout,
		maxIdle:      DefaultMaxIdle,
		maxActive:    DefaultMaxActive,
		idleTimeout:  DefaultIdleTimeout,
		pipeline:     DefaultPipeline,
		pipeConns:    DefaultPipelineConns,
	}
}

// New returns a pool to one Redis master. addr is "host:port", or a URL:
//
//	redis://[user[:password]@]host[:port][/db][?dial_timeout=1s&read_timeout=1s&...]
//	rediss://...   the same over TLS
//
// Query parameters: dial_timeout, read_timeout, write_timeout, idle_timeout
// (Go durations), max_idle, max_active, db, pipeline_conns (integers),
// pipeline (true or false: see WithPipeline). Options given to New override
// what the URL says.
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
// Give tls_* parameters or WithTLS, not both.
func New(addr string, opts ...Option) (*Redis, error) {
	c, err := resolve(addr, opts)
	if err != nil {
		return nil, err
	}
	r := &Redis{addr: c.addr, readTimeout: c.readTimeout}
	nd := netDialer(c)
	dialOpts := []redis.DialOption{
		redis.DialContextFunc(nd),
		redis.DialReadTimeout(c.readTimeout),
		redis.DialWriteTimeout(c.writeTimeout),
		redis.DialDatabase(c.db),
	}
	if c.password != "" {
		dialOpts = append(dialOpts, redis.DialPassword(c.password))
		if c.username != "" {
			dialOpts = append(dialOpts, redis.DialUsername(c.username))
		}
	}
	r.dialNet = func(ctx context.Context, capture *net.Conn) (redis.Conn, error) {
		// One deadline for the whole dial: redigo bounds AUTH and SELECT
		// by the ctx, or else by the read timeout.
		if c.dialTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.dialTimeout)
			defer cancel()
		}
		opts := dialOpts
		if capture != nil {
			opts = append(dialOpts[:len(dialOpts):len(dialOpts)], redis.DialContextFunc(
				func(ctx context.Context, network, addr string) (net.Conn, error) {
					nc, err := nd(ctx, network, addr)
					*capture = nc
					return nc, err
				}))
		}
		conn, err := redis.DialContext(ctx, "tcp", c.addr, opts...)
		if err != nil {
			// A refused AUTH or SELECT is the master's reply: the
			// driver's error, so that its code (WRONGPASS) is read.
			return nil, serverError(err)
		}
		r.dials.Add(1)
		return conn, nil
	}
	r.dial = func(ctx context.Context) (redis.Conn, error) { return r.dialNet(ctx, nil) }
	r.pool = &redis.Pool{
		MaxIdle:     c.maxIdle,
		MaxActive:   c.maxActive,
		IdleTimeout: c.idleTimeout,
		Wait:        c.maxActive > 0,
		DialContext: r.dial,
	}
	if c.pipeline {
		r.pl = newPipeline(r, c.pipeConns, c.writeTimeout)
	}
	return r, nil
}

// netDialer returns the function that opens the network connection,
// including the TLS handshake, within the dial's ctx. redigo's own TLS
// handshake is bounded only by a fixed timeout and ignores the ctx.
func netDialer(c config) func(ctx context.Context, network, addr string) (net.Conn, error) {
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
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
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

// Get returns a pooled connection, dialling one within ctx's deadline if none
// is idle.
func (r *Redis) Get(ctx context.Context) (redis.Conn, error) {
	conn, err := r.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	return conn, nil
}

// Dial opens a connection outside the pool, with the pool's settings. The
// caller owns it and closes it.
func (r *Redis) Dial(ctx context.Context) (redis.Conn, error) { return r.dial(ctx) }

// Addr returns the master's "host:port".
func (r *Redis) Addr() string { return r.addr }

// Dials returns how many connections this pool has opened so far.
func (r *Redis) Dials() uint64 { return r.dials.Load() }

// Stats returns the redigo pool's counters.
func (r *Redis) Stats() redis.PoolStats { return r.pool.Stats() }

// Close closes the idle connections, and in the pipelined mode the shared
// ones: Evals waiting on them return an error at once. Connections in use
// are closed when they are given back.
func (r *Redis) Close() error {
	if r.pl != nil {
		r.pl.close()
	}
	return r.pool.Close()
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
	}{{"dial timeout", c.dialTimeout}, {"read timeout", c.readTimeout}, {"write timeout", c.writeTimeout}, {"idle timeout", c.idleTimeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Sprintf("%s %v is negative", d.name, d.v))
		}
	}
	if c.maxIdle < 0 {
		errs = append(errs, fmt.Sprintf("max idle %d is negative", c.maxIdle))
	}
	if c.maxActive < 0 {
		errs = append(errs, fmt.Sprintf("max active %d is negative", c.maxActive))
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
