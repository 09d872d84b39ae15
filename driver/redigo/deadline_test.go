package redigo_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// A paused (SIGSTOP) server keeps its sockets: the kernel still accepts TCP
// connections, but nothing is ever answered. Every wait on it must end at
// the ctx's deadline or at the configured timeout. The bounds are loose, as
// the box is noisy, and the timeouts that must not win are far longer.
const (
	shortWait = 300 * time.Millisecond
	longWait  = 20 * time.Second // a timeout that must never be the one that ends a wait
	slack     = 2 * time.Second
)

// pausedTarget is a paused server and how to reach it.
type pausedTarget struct {
	addr string
	opts []redigo.Option
}

// pausedTargets starts one server per way a dial can block on a paused
// server, and pauses it: the connect itself succeeds, then AUTH, SELECT or
// the TLS handshake waits for an answer that never comes. "plain" blocks
// only at the first command.
func pausedTargets(t *testing.T) map[string]pausedTarget {
	t.Helper()
	pki := newTestPKI(t, "good")
	plain := startRedis(t)
	auth := startRedisWithAuth(t, []any{"CONFIG", "SET", "requirepass", defaultPassword})
	tlsSrv := startTLSRedis(t, pki)
	for _, s := range []*redistest.Server{plain, auth, tlsSrv.Server} {
		require.NoError(t, s.Pause())
		t.Cleanup(func() { s.Resume() })
	}
	return map[string]pausedTarget{
		"plain":  {plain.Addr(), nil},
		"AUTH":   {auth.Addr(), []redigo.Option{redigo.WithAuth("", defaultPassword)}},
		"SELECT": {plain.Addr(), []redigo.Option{redigo.WithDB(2)}},
		"TLS":    {tlsSrv.TLSAddr(), []redigo.Option{redigo.WithTLS(pki.ClientTLS())}},
	}
}

// timed runs f and returns its error and how long it took.
func timed(f func() error) (time.Duration, error) {
	begin := time.Now()
	err := f()
	return time.Since(begin), err
}

// ping runs PING on p's shared connection, dialling it if needed, all
// within ctx.
func ping(ctx context.Context, p *redigo.Redis) error {
	_, err := p.Do(ctx, "PING")
	return err
}

func TestDeadline_PausedServer_DoEndsAtCtxDeadline(t *testing.T) {
	for name, target := range pausedTargets(t) {
		t.Run(name, func(t *testing.T) {
			opts := append([]redigo.Option{
				redigo.WithDialTimeout(longWait), redigo.WithReadTimeout(longWait), redigo.WithWriteTimeout(longWait),
			}, target.opts...)
			p := newPool(t, target.addr, opts...)

			ctx, cancel := context.WithTimeout(context.Background(), shortWait)
			defer cancel()
			elapsed, err := timed(func() error { return ping(ctx, p) })
			require.Error(t, err)
			assert.True(t, isTimeout(err), "not a timeout: %v", err)
			assert.Less(t, elapsed, shortWait+slack, "waited past the ctx's deadline")
		})
	}
}

func TestDeadline_PausedServer_DialEndsAtCtxDeadline(t *testing.T) {
	for name, target := range pausedTargets(t) {
		if name == "plain" {
			continue // nothing to wait for while dialling
		}
		t.Run(name, func(t *testing.T) {
			opts := append([]redigo.Option{redigo.WithDialTimeout(longWait), redigo.WithReadTimeout(longWait)}, target.opts...)
			p := newPool(t, target.addr, opts...)

			ctx, cancel := context.WithTimeout(context.Background(), shortWait)
			defer cancel()
			elapsed, err := timed(func() error {
				conn, err := redigo.Dial(ctx, p)
				if err == nil {
					conn.Close()
				}
				return err
			})
			require.Error(t, err)
			assert.True(t, isTimeout(err), "not a timeout: %v", err)
			assert.Less(t, elapsed, shortWait+slack, "waited past the ctx's deadline")
			assert.Zero(t, redigo.Dials(p))
		})
	}
}

// A ctx cancelled, with no deadline, ends AUTH and SELECT as its deadline
// would.
func TestDeadline_PausedServer_CancelEndsTheHandshake(t *testing.T) {
	targets := pausedTargets(t)
	for _, name := range []string{"AUTH", "SELECT"} {
		target := targets[name]
		t.Run(name, func(t *testing.T) {
			opts := append([]redigo.Option{redigo.WithDialTimeout(longWait), redigo.WithReadTimeout(longWait)}, target.opts...)
			p := newPool(t, target.addr, opts...)

			ctx, cancel := context.WithCancel(context.Background())
			stop := time.AfterFunc(shortWait, cancel)
			defer stop.Stop()
			elapsed, err := timed(func() error {
				conn, err := redigo.Dial(ctx, p)
				if err == nil {
					conn.Close()
				}
				return err
			})
			require.Error(t, err)
			assert.ErrorIs(t, err, context.Canceled)
			assert.Less(t, elapsed, shortWait+slack, "the handshake outlived its ctx")
		})
	}
}

// With no deadline on the ctx and no dial timeout, the read timeout
// bounds AUTH and SELECT.
func TestDeadline_PausedServer_ReadTimeoutBoundsTheHandshake(t *testing.T) {
	targets := pausedTargets(t)
	for _, name := range []string{"AUTH", "SELECT"} {
		target := targets[name]
		t.Run(name, func(t *testing.T) {
			opts := append([]redigo.Option{redigo.WithDialTimeout(0), redigo.WithReadTimeout(shortWait)}, target.opts...)
			p := newPool(t, target.addr, opts...)

			got := make(chan error, 1) // a dial that hangs ends when the cleanup resumes the server
			begin := time.Now()
			go func() {
				conn, err := redigo.Dial(context.Background(), p)
				if err == nil {
					conn.Close()
				}
				got <- err
			}()
			select {
			case err := <-got:
				require.Error(t, err)
				assert.True(t, isTimeout(err), "not a timeout: %v", err)
				assert.Less(t, time.Since(begin), shortWait+slack)
			case <-time.After(shortWait + slack):
				t.Fatal("the handshake outlived the read timeout")
			}
		})
	}
}

// With no deadline on the ctx, the dial timeout bounds the whole dial: the
// connect, the TLS handshake, AUTH and SELECT.
func TestDeadline_PausedServer_DialTimeoutBoundsTheWholeDial(t *testing.T) {
	for name, target := range pausedTargets(t) {
		if name == "plain" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			opts := append([]redigo.Option{redigo.WithDialTimeout(shortWait), redigo.WithReadTimeout(longWait)}, target.opts...)
			p := newPool(t, target.addr, opts...)

			elapsed, err := timed(func() error { return ping(context.Background(), p) })
			require.Error(t, err)
			assert.True(t, isTimeout(err), "not a timeout: %v", err)
			assert.Less(t, elapsed, shortWait+slack, "the dial timeout did not bound the dial")
		})
	}
}

// With no deadline on the ctx, the read timeout bounds a command.
func TestDeadline_PausedServer_ReadTimeoutBoundsACommand(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr(), redigo.WithReadTimeout(shortWait))
	require.NoError(t, ping(context.Background(), p))

	require.NoError(t, srv.Pause())
	defer srv.Resume()
	elapsed, err := timed(func() error { return ping(context.Background(), p) })
	require.Error(t, err)
	assert.True(t, isTimeout(err), "not a timeout: %v", err)
	assert.Less(t, elapsed, shortWait+slack)
}

func TestDeadline_ResumedServer_ConnectionReplaced(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr())
	require.NoError(t, ping(testCtx(t), p))

	require.NoError(t, srv.Pause())
	ctx, cancel := context.WithTimeout(context.Background(), shortWait)
	defer cancel()
	require.Error(t, ping(ctx, p), "a paused server answered")

	// The next call, while the server stays paused, replaces the connection
	// on which the call timed out at once: the first of a silent
	// connection's replacements goes without delay. (Once the server is
	// resumed, the late reply would end the silence, and the old
	// connection would serve again.)
	next := make(chan error, 1)
	go func() { next <- ping(testCtx(t), p) }()
	require.Eventually(t, func() bool { return redigo.Dials(p) == 2 }, 5*time.Second, 5*time.Millisecond,
		"no new connection while the old one is silent")
	require.NoError(t, srv.Resume())
	assert.NoError(t, <-next)
	assert.EqualValues(t, 2, redigo.Dials(p))
}
