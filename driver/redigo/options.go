package redigo

import (
	"crypto/tls"
	"time"
)

// Option configures a pool built by New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithDialTimeout bounds connecting, including the TLS handshake, AUTH and
// SELECT, as one deadline; a ctx with an earlier deadline ends the dial
// sooner. Default 1s. Must not be negative; 0 means no bound but the ctx's.
func WithDialTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.dialTimeout = d })
}

// WithReadTimeout bounds each read when the caller's ctx has no earlier
// deadline. Default 1s. Must not be negative; 0 means no bound.
func WithReadTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.readTimeout = d })
}

// WithWriteTimeout bounds each write. Default 1s. Must not be negative; 0 means no bound.
func WithWriteTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.writeTimeout = d })
}

// WithMaxIdle sets how many idle connections the pool keeps. Default 64.
// Keep it at least the number of goroutines locking at once, or connections
// are dialled and closed on every lock.
func WithMaxIdle(n int) Option { return optionFunc(func(c *config) { c.maxIdle = n }) }

// WithMaxActive caps the connections open at once; Get then waits for one
// within its ctx. Default 0, no cap.
func WithMaxActive(n int) Option { return optionFunc(func(c *config) { c.maxActive = n }) }

// WithIdleTimeout closes connections idle for longer than d. Default 5m; 0
// keeps them forever. Keep it below the server's own timeout setting.
func WithIdleTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.idleTimeout = d })
}

// WithAuth sends AUTH on every new connection: with a username for Redis 6
// ACLs, or with the password alone when username is "". Default: no AUTH.
func WithAuth(username, password string) Option {
	return optionFunc(func(c *config) { c.username, c.password = username, password })
}

// WithDB selects a logical database on every new connection. Default 0.
func WithDB(db int) Option { return optionFunc(func(c *config) { c.db = db }) }

// WithTLS connects over TLS with the given configuration, which New copies;
// nil means Go's defaults. If its ServerName is empty, the host of the
// address is used. TLSParams.Config builds one from PEM files. It cannot be
// combined with a URL's tls_* parameters. Default: plain TCP, unless the
// address is a rediss:// URL.
func WithTLS(cfg *tls.Config) Option {
	return optionFunc(func(c *config) { c.tls, c.useTLS, c.tlsOption = cfg, true, true })
}

// WithPipeline chooses how Eval and Do reach the master. Pipelined (true),
// every call shares one connection (see WithPipelineConns): the commands of
// calls made at once go out in one write and their replies are matched in
// order, each call bounded by its own ctx. Pooled (false), each call takes a
// connection of its own from the pool (WithMaxIdle, WithMaxActive) and gives
// it back. Get, Dial and Subscribe are the same in both modes. The URL
// parameter pipeline=false chooses the pooled mode too. Default
// DefaultPipeline.
//
// Measured on one two-core machine shared with five local masters (see
// docs/benchmarks.md): with 64 goroutines locking at once, pipelined gives
// about 2.3 times the locks per second of pooled and 3 times with masters
// 250 µs away, opens almost no connections where pooled opens one or more
// per lock, and makes one write per dozen calls. Pooled wins where one
// goroutine makes calls one at a time to one master: a lone call waits for
// one more goroutine to be woken, which on a busy machine can double its
// latency (BenchmarkEval); the lock, whose calls go to every master at once,
// sees no difference at one goroutine.
func WithPipeline(on bool) Option { return optionFunc(func(c *config) { c.pipeline = on }) }

// WithPipelineConns sets how many connections the pipelined mode shares
// among the calls, taken in turn. One is best where measured: with 64
// goroutines on one master, four connections gave 1.3 to 1.5 times the time
// per call and three times the system calls (BenchmarkEval). Default
// DefaultPipelineConns. Must be in 1..MaxPipelineConns.
func WithPipelineConns(n int) Option { return optionFunc(func(c *config) { c.pipeConns = n }) }
