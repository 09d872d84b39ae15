package redlock

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/pool"
)

// stubPool is a pool.Pool that never connects; enough for New's validation.
type stubPool struct{ a string }

func (p *stubPool) Get(context.Context) (redis.Conn, error) { return nil, errBroken }
func (p *stubPool) Addr() string                            { return p.a }
func (p *stubPool) Close() error                            { return nil }

func stubs(n int) []pool.Pool {
	out := make([]pool.Pool, n)
	for i := range out {
		out[i] = &stubPool{a: string(rune('a' + i))}
	}
	return out
}

func TestNew_BadInput(t *testing.T) {
	var typedNil *pool.Redis
	for _, tc := range []struct {
		name  string
		pools []pool.Pool
		opts  []Option
		want  string
	}{
		{"no nodes", nil, nil, "no nodes"},
		{"nil pool", []pool.Pool{&stubPool{a: "a"}, nil}, nil, "node 1 is nil"},
		{"typed nil pool", []pool.Pool{typedNil}, nil, "node 0 is nil"},
		{"same master twice", []pool.Pool{&stubPool{a: "x"}, &stubPool{a: "x"}}, nil, "nodes 0 and 1 are both x"},
		{"nil option", stubs(3), []Option{nil}, "option 0 is nil"},
		{"drift factor 1", stubs(3), []Option{WithDriftFactor(1)}, "drift factor 1 is outside [0, 1)"},
		{"drift factor negative", stubs(3), []Option{WithDriftFactor(-0.1)}, "outside [0, 1)"},
		{"drift factor NaN", stubs(3), []Option{WithDriftFactor(math.NaN())}, "outside [0, 1)"},
		{"negative margin", stubs(3), []Option{WithDriftMargin(-time.Millisecond)}, "drift margin -1ms is negative"},
		{"negative node timeout", stubs(3), []Option{WithNodeTimeout(-time.Second)}, "node timeout -1s is not positive"},
		{"zero node timeout", stubs(3), []Option{WithNodeTimeout(0)}, "not positive"},
		{"quorum below majority", stubs(5), []Option{WithQuorum(2)}, "quorum 2 is below a majority of 5 nodes (3)"},
		{"quorum above N", stubs(5), []Option{WithQuorum(6)}, "quorum 6 is above the 5 nodes"},
		{"nil retry", stubs(3), []Option{WithRetry(nil)}, "nil retry"},
		{"nil clock", stubs(3), []Option{WithClock(nil)}, "nil clock"},
		{"nil logger", stubs(3), []Option{WithLogger(nil)}, "nil logger"},
		{"nil token generator", stubs(3), []Option{WithTokenGenerator(nil)}, "nil token generator"},
		{"negative guard", stubs(3), []Option{WithRestartGuard(-time.Second)}, "restart guard window -1s is negative"},
		{"zero fence retention", stubs(3), []Option{WithFenceRetention(0)}, "fence retention 0s is not positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.pools, tc.opts...)
			require.Error(t, err)
			assert.Nil(t, c)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "redlock: ")
		})
	}
}

func TestNew_EvenAndStrictQuorumsAreAllowed(t *testing.T) {
	c, err := New(stubs(4))
	require.NoError(t, err)
	assert.Equal(t, 3, c.Quorum())
	require.NoError(t, c.Close())
	c, err = New(stubs(5), WithQuorum(5))
	require.NoError(t, err)
	assert.Equal(t, 5, c.Quorum())
	require.NoError(t, c.Close())
}

func TestNewFromAddrs_BadAddress(t *testing.T) {
	for _, addrs := range [][]string{nil, {""}, {"localhost"}, {"127.0.0.1:1", "http://x:1"}, {"redis://:secret@h:0"}} {
		_, err := NewFromAddrs(addrs)
		require.Error(t, err, "%q", addrs)
		assert.ErrorIs(t, err, ErrInvalid)
		assert.NotContains(t, err.Error(), "secret", "a password never reaches an error")
	}
}

func TestLockCalls_BadInput(t *testing.T) {
	c, _, _ := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0))
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		key  string
		ttl  time.Duration
		opts []LockOption
		want string
	}{
		{"nil ctx", nil, "k", time.Second, nil, "nil context"},
		{"empty key", ctx, "", time.Second, nil, "empty key"},
		{"reserved key", ctx, "quorumlock:fence:k", time.Second, nil, "reserved prefix"},
		{"zero ttl", ctx, "k", 0, nil, "ttl 0s is not positive"},
		{"negative ttl", ctx, "k", -time.Second, nil, "ttl -1s is not positive"},
		{"sub-millisecond ttl", ctx, "k", 999 * time.Microsecond, nil, "leaves no validity"},
		{"ttl eaten by drift", ctx, "k", 2 * time.Millisecond, nil, "ttl 2ms leaves no validity after the drift reserve"},
		{"nil lock option", ctx, "k", time.Second, []LockOption{nil}, "lock option 0 is nil"},
		{"empty owner", ctx, "k", time.Second, []LockOption{WithOwner("")}, "empty owner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, call := range map[string]func() error{
				"TryLock": func() error { _, err := c.TryLock(tc.ctx, tc.key, tc.ttl, tc.opts...); return err },
				"Lock":    func() error { _, err := c.Lock(tc.ctx, tc.key, tc.ttl, tc.opts...); return err },
				"Do": func() error {
					return c.Do(tc.ctx, tc.key, tc.ttl, func(context.Context) error { return nil }, tc.opts...)
				},
			} {
				err := call()
				require.Error(t, err, name)
				assert.ErrorIs(t, err, ErrInvalid, name)
				assert.Contains(t, err.Error(), tc.want, name)
			}
		})
	}
	assert.ErrorIs(t, c.Do(ctx, "k", time.Second, nil), ErrInvalid, "nil function")
	_, err := c.Inspect(nil, "k") //nolint:staticcheck // a nil ctx is the input under test
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = c.Inspect(ctx, "")
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestLock_NeverObtainedOrReleasedTwice(t *testing.T) {
	ctx := context.Background()
	var nilLock *Lock
	assert.ErrorIs(t, nilLock.Release(ctx), ErrInvalid)
	assert.ErrorIs(t, nilLock.Extend(ctx, time.Second), ErrInvalid)
	var zero Lock
	assert.ErrorIs(t, zero.Release(ctx), ErrInvalid)
	assert.ErrorIs(t, zero.Extend(ctx, time.Second), ErrInvalid)

	c, _, _ := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0))
	l, err := c.TryLock(ctx, "k", time.Second)
	require.NoError(t, err)
	assert.ErrorIs(t, l.Release(nil), ErrInvalid) //nolint:staticcheck // a nil ctx is the input under test
	assert.ErrorIs(t, l.Extend(ctx, 0), ErrInvalid)
	require.NoError(t, l.Release(ctx))
	assert.ErrorIs(t, l.Release(ctx), ErrLockNotHeld, "released twice")
	assert.ErrorIs(t, l.Extend(ctx, time.Second), ErrLockNotHeld, "extended after release")
	assert.NoError(t, l.Err(), "a clean release is no loss")
	assert.LessOrEqual(t, l.Validity(), time.Duration(0))
	select {
	case <-l.Done():
	default:
		t.Fatal("Done not closed after Release")
	}
}

func TestTokenGenerator(t *testing.T) {
	c, _, _ := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0),
		WithTokenGenerator(func() (string, error) { return "", nil }))
	_, err := c.TryLock(context.Background(), "k", time.Second)
	assert.ErrorIs(t, err, ErrInvalid)

	boom := errors.New("no entropy")
	c2, _, _ := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0),
		WithTokenGenerator(func() (string, error) { return "", boom }))
	_, err = c2.TryLock(context.Background(), "k", time.Second)
	assert.ErrorIs(t, err, boom)

	tok, err := RandomToken()
	require.NoError(t, err)
	assert.Len(t, tok, 32, "128 bits in hex")
	other, _ := RandomToken()
	assert.NotEqual(t, tok, other)
}

func TestClosedClient(t *testing.T) {
	c, _, _ := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0))
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	_, err := c.TryLock(context.Background(), "k", time.Second)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = c.Inspect(context.Background(), "k")
	assert.ErrorIs(t, err, ErrClosed)
}

func TestNodeError_As(t *testing.T) {
	inner := errors.New("boom")
	var err error = &NodeError{Node: 2, Addr: "h:1", Err: inner}
	var ne *NodeError
	require.True(t, errors.As(err, &ne))
	assert.Equal(t, 2, ne.Node)
	assert.ErrorIs(t, err, inner)
	assert.Equal(t, "redlock: node 2 (h:1): boom", err.Error())
}

func TestBackoff(t *testing.T) {
	b := ExponentialBackoff(time.Millisecond, 8*time.Millisecond)
	for n := 1; n <= 10; n++ {
		for range 50 {
			d, ok := b.Delay(n)
			require.True(t, ok)
			limit := min(time.Millisecond<<(n-1), 8*time.Millisecond)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, limit, "retry %d", n)
		}
	}
	d, ok := ExponentialBackoff(0, time.Second).Delay(3)
	assert.True(t, ok)
	assert.Zero(t, d)
	_, ok = LimitRetry(ConstantBackoff(time.Millisecond), 2).Delay(3)
	assert.False(t, ok)
	_, ok = NoRetry().Delay(1)
	assert.False(t, ok)
	d, _ = ConstantBackoff(-time.Second).Delay(1)
	assert.Zero(t, d)
}
