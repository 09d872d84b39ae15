package redigo_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

func TestRedis_Do_RoundTrip(t *testing.T) {
	srv := startRedis(t)
	for _, addr := range []string{srv.Addr(), "redis://" + srv.Addr(), "localhost:" + strings.Split(srv.Addr(), ":")[1]} {
		t.Run(addr, func(t *testing.T) {
			p := newPool(t, addr)
			ctx := testCtx(t)
			_, err := p.Do(ctx, "SET", "greeting", "hello "+addr)
			require.NoError(t, err)
			got, err := p.Do(ctx, "GET", "greeting")
			require.NoError(t, err)
			assert.Equal(t, "hello "+addr, got)
		})
	}
}

func TestRedis_Addr_IsHostPort(t *testing.T) {
	for addr, want := range map[string]string{
		"10.0.0.7:6379":              "10.0.0.7:6379",
		"redis://10.0.0.7":           "10.0.0.7:6379",
		"rediss://u:p@cache:7000/2":  "cache:7000",
		"redis://[::1]:7001?db=1":    "[::1]:7001",
		"redis://localhost:06379/15": "localhost:6379",
	} {
		p, err := redigo.New(addr)
		require.NoError(t, err, addr)
		assert.Equal(t, want, p.Addr(), addr)
		p.Close()
	}
}

func TestRedis_Dials_CountsNewConnections(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr())
	ctx := testCtx(t)
	require.Zero(t, redigo.Dials(p))

	_, err := p.Do(ctx, "PING")
	require.NoError(t, err)
	assert.EqualValues(t, 1, redigo.Dials(p), "the first call dials")

	_, err = p.Do(ctx, "PING")
	require.NoError(t, err)
	assert.EqualValues(t, 1, redigo.Dials(p), "the connection is shared, not dialled again")
}

func TestRedis_Dials_FailedDialNotCounted(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr())
	require.NoError(t, srv.Kill())

	_, err := p.Do(testCtx(t), "PING")
	require.Error(t, err)
	assert.Zero(t, redigo.Dials(p))
}

func TestRedis_Dials_CountsRedialAfterRestart(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr())
	_, err := p.Do(testCtx(t), "PING")
	require.NoError(t, err)
	require.EqualValues(t, 1, redigo.Dials(p))

	require.NoError(t, srv.Kill())
	require.NoError(t, srv.Restart(redistest.Ephemeral))
	// The connection is dead: a call on it fails and discards it, the next
	// dials again. Bounded: two tries are enough.
	for range 2 {
		if _, err = p.Do(testCtx(t), "PING"); err == nil {
			break
		}
	}
	require.NoError(t, err)
	assert.EqualValues(t, 2, redigo.Dials(p))
}

func TestRedis_Close(t *testing.T) {
	srv := startRedis(t)
	p, err := redigo.New(srv.Addr())
	require.NoError(t, err)
	ctx := testCtx(t)
	monitor := newPool(t, srv.Addr())

	_, err = p.Do(ctx, "PING")
	require.NoError(t, err)
	require.Equal(t, 2, connectedClients(t, monitor), "one from p, one from the monitor")

	require.NoError(t, p.Close())

	_, err = p.Do(ctx, "PING")
	require.Error(t, err, "Do after Close")
	assert.Contains(t, err.Error(), "closed")

	// The server sees p's connection go.
	deadline := time.Now().Add(waitLimit)
	for connectedClients(t, monitor) != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, 1, connectedClients(t, monitor), "Close left connections open")

	assert.NoError(t, p.Close(), "a second Close")
}

func TestRedis_ConcurrentDos_ShareOneConnection(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr())
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Do(testCtx(t), "INCR", "counter"); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n, err := redis.Int(mustDo(t, p, "GET", "counter"), nil)
	require.NoError(t, err)
	assert.Equal(t, 16, n)
	assert.EqualValues(t, 1, redigo.Dials(p))
}

// connectedClients returns the server's connected_clients, counting the
// monitor's own connection.
func connectedClients(t *testing.T, monitor *redigo.Redis) int {
	t.Helper()
	info, err := redis.String(mustDo(t, monitor, "INFO", "clients"), nil)
	require.NoError(t, err)
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
			n, err := redis.Int([]byte(v), nil)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no connected_clients in %q", info)
	return 0
}
