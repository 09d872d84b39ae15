package redlock

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo"
)

// stubPool is a driver that never connects; enough for New's validation.
type stubPool struct{ a string }

func (p *stubPool) Addr() string { return p.a }
func (p *stubPool) Start(_ context.Context, _ driver.Call, done driver.Done) {
	done.Returned(driver.Reply{}, errBroken)
}
func (p *stubPool) Subscribe(context.Context) (driver.Subscription, error) { return nil, errBroken }
func (p *stubPool) Close() error                                           { return nil }
func (p *stubPool) Sharded() bool                                          { return false }

func stubs(n int) []driver.Master {
	out := make([]driver.Master, n)
	for i := range out {
		out[i] = &stubPool{a: string(rune('a' + i))}
	}
	return out
}

func TestNew_BadInput(t *testing.T) {
	var typedNil *redigo.Redis
	for _, tc := range []struct {
		name  string
		pools []driver.Master
		opts  []Option
		want  string
	}{
		{"no nodes", nil, nil, "no nodes"},
		{"nil pool", []driver.Master{&stubPool{a: "a"}, nil}, nil, "node 1 is nil"},
		{"typed nil pool", []driver.Master{typedNil}, nil, "node 0 is nil"},
		{"same master twice", []driver.Master{&stubPool{a: "x"}, &stubPool{a: "x"}}, nil, "nodes 0 and 1 are both x"},
		{"zero driver", []driver.Master{&redigo.Redis{}}, nil, "node 0 (*redigo.Redis) has no address: make it with its driver's constructor"},
		{"zero cluster driver", []driver.Master{&stubPool{a: "a"}, &redigo.Cluster{}}, nil, "node 1 (*redigo.Cluster) has no address"},
		{"nil option", stubs(3), []Option{nil}, "option 0 is nil"},
		{"drift factor 1", stubs(3), []Option{WithDriftFactor(1)}, "drift factor 1 is outside [0, 1)"},
		{"namespace with a brace", stubs(3), []Option{WithNamespace("app{x}:")}, "has a brace"},
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
				"Resume": func() error { _, err := c.Resume(tc.ctx, tc.key, "t", tc.ttl, tc.opts...); return err },
			} {
				err := call()
				require.Error(t, err, name)
				assert.ErrorIs(t, err, ErrInvalid, name)
				assert.Contains(t, err.Error(), tc.want, name)
			}
		})
	}
	assert.ErrorIs(t, c.Do(ctx, "k", time.Second, nil), ErrInvalid, "nil function")
	_, err := c.Resume(ctx, "k", "", time.Second)
	assert.ErrorIs(t, err, ErrInvalid, "empty token")
	assert.Contains(t, err.Error(), "empty token")
	_, err = c.Inspect(nil, "k") //nolint:staticcheck // a nil ctx is the input under test
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

// No input panics: every call below panicked or overflowed once.
func TestNoPanicOnAnyInput(t *testing.T) {
	ctx := context.Background()
	var nilLock *Lock
	var zero Lock
	var nilClient *Client
	for name, call := range map[string]func(){
		"exponential overflow":   func() { ExponentialBackoff(10*time.Millisecond, math.MaxInt64).Delay(41) },
		"exponential at max":     func() { ExponentialBackoff(math.MaxInt64, math.MaxInt64).Delay(1) },
		"exponential huge n":     func() { ExponentialBackoff(time.Millisecond, math.MaxInt64).Delay(math.MaxInt) },
		"exponential n zero":     func() { ExponentialBackoff(time.Millisecond, time.Second).Delay(0) },
		"exponential n negative": func() { ExponentialBackoff(time.Millisecond, time.Second).Delay(-5) },
		"limit of nil":           func() { LimitRetry(nil, 3).Delay(1) },
		"nil lock Fence":         func() { nilLock.Fence() },
		"nil lock Done":          func() { <-nilLock.Done() },
		"nil lock Err":           func() { nilLock.Err() },
		"nil lock accessors": func() {
			_, _, _, _, _ = nilLock.Key(), nilLock.Token(), nilLock.Owner(), nilLock.TTL(), nilLock.Until()
		},
		"nil lock Validity":          func() { nilLock.Validity() },
		"nil lock Granted":           func() { nilLock.Granted() },
		"zero lock Validity":         func() { zero.Validity() },
		"zero lock Granted":          func() { zero.Granted() },
		"zero lock Done":             func() { <-zero.Done() },
		"zero lock Err":              func() { zero.Err() },
		"zero lock Fence":            func() { zero.Fence() },
		"nil client Inspect":         func() { nilClient.Inspect(ctx, "k") },
		"nil client Close":           func() { nilClient.Close() },
		"nil client TryLock":         func() { nilClient.TryLock(ctx, "k", time.Second) },
		"nil client Lock":            func() { nilClient.Lock(ctx, "k", time.Second) },
		"nil client Do":              func() { nilClient.Do(ctx, "k", time.Second, func(context.Context) error { return nil }) },
		"nil client Resume":          func() { nilClient.Resume(ctx, "k", "t", time.Second) },
		"nil client Nodes, Quorum":   func() { nilClient.Nodes(); nilClient.Quorum() },
		"nil BackoffFunc as retry":   func() { New(stubs(3), WithRetry(BackoffFunc(nil))) },
		"LimitRetry of nil as retry": func() { New(stubs(3), WithRetry(LimitRetry(nil, 2))) },
	} {
		assert.NotPanics(t, call, name)
	}
	assert.ErrorIs(t, nilLock.Err(), ErrInvalid)
	assert.ErrorIs(t, nilClient.Close(), ErrInvalid)
	_, err := nilClient.Inspect(ctx, "k")
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = New(stubs(3), WithRetry(BackoffFunc(nil)))
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = New(stubs(3), WithRetry(LimitRetry(nil, 2)))
	assert.ErrorIs(t, err, ErrInvalid)
	for _, n := range []int{-5, 0, 1, 41, 64, math.MaxInt} {
		d, ok := ExponentialBackoff(10*time.Millisecond, math.MaxInt64).Delay(n)
		assert.True(t, ok)
		assert.GreaterOrEqual(t, d, time.Duration(0), "retry %d", n)
	}
	d, ok := ExponentialBackoff(time.Second, 100*time.Millisecond).Delay(1)
	assert.True(t, ok)
	assert.LessOrEqual(t, d, 100*time.Millisecond, "max bounds a base above it")
}

// A Client, Semaphore or RWLock that no constructor made, zero or nil,
// returns ErrInvalid from every call that takes it: it never panics, and
// never leaves work that Close would wait for.
func TestUnmadeValues_AreInvalid(t *testing.T) {
	ctx := context.Background()
	var zero Client
	var nilSem, zeroSem = (*Semaphore)(nil), &Semaphore{}
	var nilRW, zeroRW = (*RWLock)(nil), &RWLock{}
	for name, call := range map[string]func() error{
		"zero client TryLock":    func() error { _, err := zero.TryLock(ctx, "k", time.Second); return err },
		"zero client Lock":       func() error { _, err := zero.Lock(ctx, "k", time.Second); return err },
		"zero client Do":         func() error { return zero.Do(ctx, "k", time.Second, func(context.Context) error { return nil }) },
		"zero client TryLockAll": func() error { _, err := zero.TryLockAll(ctx, []string{"a"}, time.Second); return err },
		"zero client Resume":     func() error { _, err := zero.Resume(ctx, "k", "t", time.Second); return err },
		"zero client Inspect":    func() error { _, err := zero.Inspect(ctx, "k"); return err },
		"zero client Check":      func() error { _, err := zero.Check(ctx, CheckParams{TTL: time.Second}); return err },
		"zero client Semaphore":  func() error { _, err := zero.Semaphore("k", 2); return err },
		"zero client RWLock":     func() error { _, err := zero.RWLock("k"); return err },
		"zero client Close":      func() error { return zero.Close() },
		"nil semaphore Acquire":  func() error { _, err := nilSem.Acquire(ctx, time.Second); return err },
		"nil semaphore Do":       func() error { return nilSem.Do(ctx, time.Second, func(context.Context) error { return nil }) },
		"zero semaphore Acquire": func() error { _, err := zeroSem.TryAcquire(ctx, time.Second); return err },
		"nil rwlock RLock":       func() error { _, err := nilRW.RLock(ctx, time.Second); return err },
		"zero rwlock Lock":       func() error { _, err := zeroRW.Lock(ctx, time.Second); return err },
	} {
		var err error
		require.NotPanics(t, func() { err = call() }, name)
		assert.ErrorIs(t, err, ErrInvalid, name)
	}
	assert.Zero(t, zero.Nodes()+zero.Quorum())
	assert.Zero(t, nilSem.Permits()+nilSem.Quorum())
	assert.Empty(t, nilSem.Key())
	_, err := zero.TryLock(ctx, "k", time.Second)
	assert.EqualError(t, err, "redlock: invalid argument: zero client: make it with New or NewFromAddrs")
}

// TTLs past MaxTTL, which would wrap the restart guard's window or Redis's
// expiry, are refused with ErrInvalid before anything is sent, and leave
// the window as it was.
func TestTTL_AboveTheMaximumIsInvalid(t *testing.T) {
	c, fakes, _ := newFakeClient(t, make([]behaviour, 3))
	ctx := context.Background()
	before := c.guardWindow()
	for _, ttl := range []time.Duration{math.MaxInt64 - 11*time.Minute, math.MaxInt64, MaxTTL + time.Millisecond} {
		_, err := c.TryLock(ctx, "k", ttl)
		require.ErrorIs(t, err, ErrInvalid, "ttl %v", ttl)
		assert.Contains(t, err.Error(), "maximum")
		_, err = c.Lock(ctx, "k", ttl)
		require.ErrorIs(t, err, ErrInvalid, "ttl %v", ttl)
	}
	assert.Equal(t, before, c.guardWindow(), "a refused TTL widened the guard window")
	assert.Positive(t, c.guardWindow()+1, "window %v", c.guardWindow())
	for _, f := range fakes {
		assert.Empty(t, f.callsOf("acquire"), "a refused TTL was sent")
	}
	l, err := c.TryLock(ctx, "k", MaxTTL)
	require.NoError(t, err, "MaxTTL itself is allowed")
	assert.ErrorIs(t, l.Extend(ctx, math.MaxInt64), ErrInvalid)
	assert.NoError(t, l.Err(), "a refused extension loses nothing")
	require.NoError(t, l.Release(ctx))
	_, err = New(stubs(3), WithFenceRetention(math.MaxInt64))
	assert.ErrorIs(t, err, ErrInvalid)
}
