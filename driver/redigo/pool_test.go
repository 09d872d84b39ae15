package redigo_test

import (
	"context"
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

func TestRedis_GetDo_RoundTrip(t *testing.T) {
	srv := startRedis(t)
	for _, addr := range []string{srv.Addr(), "redis://" + srv.Addr(), "localhost:" + strings.Split(srv.Addr(), ":")[1]} {
		t.Run(addr, func(t *testing.T) {
			p := newPool(t, addr)
			ctx := testCtx(t)
			conn, err := p.Get(ctx)
			require.NoError(t, err)
			defer conn.Close()

			_, err = redis.DoContext(conn, ctx, "SET", "greeting", "hello "+addr)
			require.NoError(t, err)
			got, err := redis.String(redis.DoContext(conn, ctx, "GET", "greeting"))
			require.NoError(t, err)
			assert.Equal(t, "hello "+addr, got)
			assert.NoError(t, conn.Err())
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
	require.Zero(t, p.Dials())

	mustDo(t, p, "PING")
	assert.EqualValues(t, 1, p.Dials(), "first Get dials")

	mustDo(t, p, "PING")
	assert.EqualValues(t, 1, p.Dials(), "an idle connection is reused, not dialled")

	c1, err := p.Get(ctx)
	require.NoError(t, err)
	c2, err := p.Get(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 2, p.Dials(), "two connections at once: one reused, one dialled")
	require.NoError(t, c1.Close())
	require.NoError(t, c2.Close())

	own, err := p.Dial(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 3, p.Dials(), "Dial counts too")
	idle := p.Stats().IdleCount
	_, err = redis.DoContext(own, ctx, "PING")
	require.NoError(t, err)
	require.NoError(t, own.Close())
	assert.Equal(t, idle, p.Stats().IdleCount, "a connection from Dial never joins the pool")
}

func TestRedis_Dials_FailedDialNotCounted(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr())
	require.NoError(t, srv.Kill())

	_, err := do(testCtx(t), p, "PING")
	require.Error(t, err)
	_, err = p.Dial(testCtx(t))
	require.Error(t, err)
	assert.Zero(t, p.Dials())
}

func TestRedis_Dials_CountsRedialAfterRestart(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr())
	mustDo(t, p, "PING")
	require.EqualValues(t, 1, p.Dials())

	require.NoError(t, srv.Kill())
	require.NoError(t, srv.Restart(redistest.Ephemeral))
	// The idle connection is dead: the first use fails and discards it,
	// the next Get dials again. Bounded: two tries are enough.
	var err error
	for range 2 {
		if _, err = do(testCtx(t), p, "PING"); err == nil {
			break
		}
	}
	require.NoError(t, err)
	assert.EqualValues(t, 2, p.Dials())
}

func TestRedis_MaxActive_WaitingGetHonoursCtx(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr(), redigo.WithMaxActive(1))
	held, err := p.Get(testCtx(t))
	require.NoError(t, err)
	defer held.Close()

	t.Run("deadline", func(t *testing.T) {
		const wait = 200 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		begin := time.Now()
		conn, err := p.Get(ctx)
		elapsed := time.Since(begin)
		require.Error(t, err)
		assert.Nil(t, conn)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.GreaterOrEqual(t, elapsed, wait/2, "returned before the ctx was done")
		assert.Less(t, elapsed, wait+2*time.Second, "waited past the ctx's deadline")
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := p.Get(ctx)
		assert.ErrorIs(t, err, context.Canceled)
	})
	assert.Equal(t, 1, p.Stats().ActiveCount, "a failed wait leaves the count alone")
	assert.EqualValues(t, 1, p.Dials())
}

func TestRedis_MaxActive_WaiterGetsTheReturnedConnection(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr(), redigo.WithMaxActive(1))
	held, err := p.Get(testCtx(t))
	require.NoError(t, err)

	got := make(chan error, 1)
	go func() {
		conn, err := p.Get(testCtx(t))
		if err == nil {
			_, err = redis.DoContext(conn, testCtx(t), "PING")
			conn.Close()
		}
		got <- err
	}()
	// Whether the waiter is already waiting or not, it gets the connection.
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, held.Close())
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(waitLimit):
		t.Fatal("the waiting Get did not get the returned connection")
	}
	assert.EqualValues(t, 1, p.Dials(), "the connection was handed over, not dialled again")
}

func TestRedis_MaxIdle_KeepsThatMany(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr(), redigo.WithMaxIdle(2))
	ctx := testCtx(t)
	var conns []redis.Conn
	for range 4 {
		c, err := p.Get(ctx)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	for _, c := range conns {
		require.NoError(t, c.Close())
	}
	assert.Equal(t, 2, p.Stats().IdleCount)
	assert.Equal(t, 2, p.Stats().ActiveCount)
}

func TestRedis_IdleTimeout_ClosesStaleConnections(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr(), redigo.WithIdleTimeout(20*time.Millisecond))
	mustDo(t, p, "PING")
	time.Sleep(60 * time.Millisecond) // longer than the idle timeout, however slow the box
	mustDo(t, p, "PING")
	assert.EqualValues(t, 2, p.Dials(), "the stale connection was reused")
}

func TestRedis_Close(t *testing.T) {
	srv := startRedis(t)
	p, err := redigo.New(srv.Addr())
	require.NoError(t, err)
	ctx := testCtx(t)
	monitor := newPool(t, srv.Addr())

	// Two idle connections, one in use.
	a, err := p.Get(ctx)
	require.NoError(t, err)
	b, err := p.Get(ctx)
	require.NoError(t, err)
	inUse, err := p.Get(ctx)
	require.NoError(t, err)
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	require.Equal(t, 4, connectedClients(t, monitor), "three from p, one from the monitor")

	require.NoError(t, p.Close())

	_, err = p.Get(ctx)
	require.Error(t, err, "Get after Close")
	assert.Contains(t, err.Error(), "closed")

	_, err = redis.DoContext(inUse, ctx, "PING")
	assert.NoError(t, err, "a connection in use keeps working after Close")
	require.NoError(t, inUse.Close())

	// The server sees the idle and the returned connections go.
	deadline := time.Now().Add(waitLimit)
	for connectedClients(t, monitor) != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, 1, connectedClients(t, monitor), "Close left connections open")
	assert.Zero(t, p.Stats().ActiveCount)

	assert.NoError(t, p.Close(), "a second Close")
}

func TestRedis_ConcurrentGets(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr(), redigo.WithMaxActive(4))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := do(testCtx(t), p, "INCR", "counter"); err != nil {
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
	assert.LessOrEqual(t, p.Dials(), uint64(4))
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
