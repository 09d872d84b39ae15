package pool_test

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/pool"
)

func TestNew_InvalidOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    []pool.Option
		wantErr []string // parts of the error text: the bad values are named
	}{
		{"negative dial timeout", []pool.Option{pool.WithDialTimeout(-time.Second)}, []string{"dial timeout -1s is negative"}},
		{"negative read timeout", []pool.Option{pool.WithReadTimeout(-time.Millisecond)}, []string{"read timeout -1ms is negative"}},
		{"negative write timeout", []pool.Option{pool.WithWriteTimeout(-time.Nanosecond)}, []string{"write timeout -1ns is negative"}},
		{"negative idle timeout", []pool.Option{pool.WithIdleTimeout(-time.Minute)}, []string{"idle timeout -1m0s is negative"}},
		{"negative max idle", []pool.Option{pool.WithMaxIdle(-1)}, []string{"max idle -1 is negative"}},
		{"negative max active", []pool.Option{pool.WithMaxActive(-2)}, []string{"max active -2 is negative"}},
		{"negative db", []pool.Option{pool.WithDB(-3)}, []string{"db -3 is negative"}},
		{"no pipeline connections", []pool.Option{pool.WithPipelineConns(0)}, []string{"pipeline connections 0 not in 1..64"}},
		{"too many pipeline connections", []pool.Option{pool.WithPipelineConns(65)}, []string{"pipeline connections 65 not in 1..64"}},
		{"username without password", []pool.Option{pool.WithAuth("alice", "")}, []string{"a username needs a password"}},
		{"nil option", []pool.Option{nil}, []string{"nil option"}},
		{"nil option after good ones", []pool.Option{pool.WithDB(1), nil}, []string{"nil option"}},
		{
			"every problem at once",
			[]pool.Option{pool.WithDialTimeout(-time.Second), pool.WithMaxIdle(-1), pool.WithDB(-1)},
			[]string{"dial timeout -1s", "max idle -1", "db -1", `"127.0.0.1:6379"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p *pool.Redis
			require.NotPanics(t, func() {
				var err error
				p, err = pool.New("127.0.0.1:6379", tt.opts...)
				require.Error(t, err)
				for _, w := range tt.wantErr {
					assert.Contains(t, err.Error(), w)
				}
			})
			assert.Nil(t, p)
		})
	}
}

func TestNew_ValidOptions(t *testing.T) {
	tests := []struct {
		name string
		opts []pool.Option
	}{
		{"none", nil},
		{"zero timeouts and limits", []pool.Option{
			pool.WithDialTimeout(0), pool.WithReadTimeout(0), pool.WithWriteTimeout(0),
			pool.WithIdleTimeout(0), pool.WithMaxIdle(0), pool.WithMaxActive(0), pool.WithDB(0),
		}},
		{"password alone", []pool.Option{pool.WithAuth("", "pw")}},
		{"username and password", []pool.Option{pool.WithAuth("alice", "pw")}},
		{"no auth", []pool.Option{pool.WithAuth("", "")}},
		{"TLS with config", []pool.Option{pool.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12})}},
		{"TLS with nil config", []pool.Option{pool.WithTLS(nil)}},
		{"large values", []pool.Option{pool.WithDB(15), pool.WithMaxIdle(1 << 20), pool.WithMaxActive(1 << 20)}},
		{"pooled", []pool.Option{pool.WithPipeline(false)}},
		{"pipelined on several connections", []pool.Option{pool.WithPipeline(true), pool.WithPipelineConns(pool.MaxPipelineConns)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := pool.New("127.0.0.1:6379", tt.opts...)
			require.NoError(t, err)
			assert.Equal(t, "127.0.0.1:6379", p.Addr())
			assert.Zero(t, p.Dials(), "New dials nothing")
			assert.NoError(t, p.Close())
		})
	}
}

func TestNew_PasswordNeverInOptionErrors(t *testing.T) {
	_, err := pool.New("redis://alice:hunter2@h:1", pool.WithMaxIdle(-1), pool.WithAuth("bob", "topsecret"), pool.WithDB(-1))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
	assert.NotContains(t, err.Error(), "topsecret")
}
