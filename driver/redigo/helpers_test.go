package redigo_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// waitLimit bounds every wait on a server that is up; the box may be slow,
// but never this slow.
const waitLimit = 10 * time.Second

// startRedis starts one redis-server with the extra arguments.
func startRedis(t testing.TB, extra ...string) *redistest.Server {
	t.Helper()
	return redistest.Start(t, 1, redistest.Ephemeral, extra...)[0]
}

// newPool returns a driver that is closed with the test.
func newPool(t *testing.T, addr string, opts ...redigo.Option) *redigo.Redis {
	t.Helper()
	p, err := redigo.New(addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// testCtx returns a ctx bounded by waitLimit.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// do runs one command on a connection of its own dialled with p's
// settings, and closes it.
func do(ctx context.Context, p *redigo.Redis, cmd string, args ...any) (any, error) {
	conn, err := redigo.Dial(ctx, p)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return redis.DoContext(conn, ctx, cmd, args...)
}

// mustDo is do for preconditions.
func mustDo(t *testing.T, p *redigo.Redis, cmd string, args ...any) any {
	t.Helper()
	v, err := do(testCtx(t), p, cmd, args...)
	require.NoError(t, err, "%s on %s", cmd, p.Addr())
	return v
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// isTimeout reports whether err says that a deadline passed: the ctx's, or a
// read, write or handshake timeout.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
