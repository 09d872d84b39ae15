package redigo_test

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver/redigo"
)

func TestNew_InvalidOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    []redigo.Option
		wantErr []string // parts of the error text: the bad values are named
	}{
		{"negative dial timeout", []redigo.Option{redigo.WithDialTimeout(-time.Second)}, []string{"dial timeout -1s is negative"}},
		{"negative read timeout", []redigo.Option{redigo.WithReadTimeout(-time.Millisecond)}, []string{"read timeout -1ms is negative"}},
		{"negative write timeout", []redigo.Option{redigo.WithWriteTimeout(-time.Nanosecond)}, []string{"write timeout -1ns is negative"}},
		{"negative db", []redigo.Option{redigo.WithDB(-3)}, []string{"db -3 is negative"}},
		{"no pipeline connections", []redigo.Option{redigo.WithPipelineConns(0)}, []string{"pipeline connections 0 not in 1..64"}},
		{"too many pipeline connections", []redigo.Option{redigo.WithPipelineConns(65)}, []string{"pipeline connections 65 not in 1..64"}},
		{"username without password", []redigo.Option{redigo.WithAuth("alice", "")}, []string{"a username needs a password"}},
		{"nil option", []redigo.Option{nil}, []string{"nil option"}},
		{"nil option after good ones", []redigo.Option{redigo.WithDB(1), nil}, []string{"nil option"}},
		{
			"every problem at once",
			[]redigo.Option{redigo.WithDialTimeout(-time.Second), redigo.WithPipelineConns(-1), redigo.WithDB(-1)},
			[]string{"dial timeout -1s", "pipeline connections -1", "db -1", `"127.0.0.1:6379"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p *redigo.Redis
			require.NotPanics(t, func() {
				var err error
				p, err = redigo.New("127.0.0.1:6379", tt.opts...)
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
		opts []redigo.Option
	}{
		{"none", nil},
		{"zero timeouts", []redigo.Option{
			redigo.WithDialTimeout(0), redigo.WithReadTimeout(0), redigo.WithWriteTimeout(0), redigo.WithDB(0),
		}},
		{"password alone", []redigo.Option{redigo.WithAuth("", "pw")}},
		{"username and password", []redigo.Option{redigo.WithAuth("alice", "pw")}},
		{"no auth", []redigo.Option{redigo.WithAuth("", "")}},
		{"TLS with config", []redigo.Option{redigo.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12})}},
		{"TLS with nil config", []redigo.Option{redigo.WithTLS(nil)}},
		{"large values", []redigo.Option{redigo.WithDB(15), redigo.WithPipelineConns(redigo.MaxPipelineConns)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := redigo.New("127.0.0.1:6379", tt.opts...)
			require.NoError(t, err)
			assert.Equal(t, "127.0.0.1:6379", p.Addr())
			assert.Zero(t, redigo.Dials(p), "New dials nothing")
			assert.NoError(t, p.Close())
		})
	}
}

func TestNew_PasswordNeverInOptionErrors(t *testing.T) {
	_, err := redigo.New("redis://alice:hunter2@h:1", redigo.WithPipelineConns(0), redigo.WithAuth("bob", "topsecret"), redigo.WithDB(-1))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
	assert.NotContains(t, err.Error(), "topsecret")
}
