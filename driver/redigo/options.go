package redigo

import (
	"crypto/tls"
	"time"
)

// Option configures a driver built by New, NewCluster or Open.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithDialTimeout bounds connecting, including the TLS handshake, AUTH and
// SELECT, as one deadline; a ctx with an earlier deadline ends the dial
// sooner, and a ctx cancelled before then leaves the dial running for the
// calls after it. Default 1s. Must not be negative; 0 means no bound but
// the ctx's deadline.
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

// WithPipelineConns sets how many connections the calls share, taken in
// turn. More connections mean more system calls and no shorter waits where
// measured (BenchmarkEval). Default DefaultPipelineConns. Must be in
// 1..MaxPipelineConns.
func WithPipelineConns(n int) Option { return optionFunc(func(c *config) { c.pipeConns = n }) }
