package redlock

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// keysOn returns the keys on a master that match pattern.
func keysOn(t *testing.T, s *redistest.Server, pattern string) []string {
	t.Helper()
	keys, err := redis.Strings(do(t, s, "KEYS", stored(pattern)), nil)
	require.NoError(t, err)
	return keys
}

// The common pattern, defer Close after Release, leaves no key on any
// master: Close waits for the deletes Release left running at the quorum.
// Checked at once after Close, with no grace period.
func TestIntegration_CloseAfterRelease_LeavesNothing(t *testing.T) {
	srv := masters(t, 5)
	for i := range 40 {
		func() {
			c, err := NewFromAddrs(urls(srv), suite(WithRestartGuard(0), WithLogger(quiet()), WithNodeTimeout(time.Second))()...) // a new client dials every master: a loaded machine must not fail it
			require.NoError(t, err)
			defer c.Close()
			l, err := c.TryLock(context.Background(), fmt.Sprintf("k%d", i), 10*time.Second)
			require.NoError(t, err)
			require.NoError(t, l.Release(context.Background()))
		}()
		for _, s := range srv {
			require.Empty(t, keysOn(t, s, "k*"), "run %d: %s keeps the key after Release and Close", i, s.Addr())
		}
	}
}

// A TryLock in flight when Close is called still rolls back: Close waits
// for it, and the pools stay open until the roll-back has run.
func TestIntegration_CloseDuringTryLock_StillRollsBack(t *testing.T) {
	srv := masters(t, 5)
	for _, s := range srv[:2] {
		do(t, s, "SET", stored("k"), "someone-else", "PX", 60_000)
	}
	require.NoError(t, srv[4].Pause()) // the attempt waits for it until the node timeout
	t.Cleanup(func() { srv[4].Resume() })
	c, err := NewFromAddrs(urls(srv), suite(WithRestartGuard(0), WithLogger(quiet()), WithNodeTimeout(300*time.Millisecond))()...)
	require.NoError(t, err)

	tried := make(chan error, 1)
	go func() {
		_, err := c.TryLock(context.Background(), "k", 10*time.Second)
		tried <- err
	}()
	require.Eventually(t, func() bool { return getString(t, srv[2], "k") != "" }, 2*time.Second, time.Millisecond,
		"the attempt reached the free masters")
	require.NoError(t, c.Close())
	// Close waited for the attempt in flight and its roll-back: nothing of it
	// is left the moment Close returns. (The caller's goroutine may see
	// TryLock return a moment after Close does: its work was done first.)
	for _, s := range srv[2:4] {
		assert.Empty(t, getString(t, s, "k"), "%s keeps the failed attempt's token after Close returned", s.Addr())
	}
	require.ErrorIs(t, <-tried, ErrNotObtained)
	srv[4].Resume()
}

// A retake that the extension started is ordered before the Release that
// follows it: the released token never comes back on the master that lost
// the key. Run many times, as the retake and the delete race otherwise.
func TestIntegration_RetakeNeverLandsAfterRelease(t *testing.T) {
	srv := masters(t, 5)
	for _, owner := range []string{"", "worker-1"} {
		var opts []LockOption
		if owner != "" {
			opts = append(opts, WithOwner(owner)) // an orphaned hold would keep the master held for the owner
		}
		for i := range 25 {
			c, err := NewFromAddrs(urls(srv), suite(WithRestartGuard(0), WithLogger(quiet()), WithNodeTimeout(time.Second))()...)
			require.NoError(t, err)
			key := fmt.Sprintf("k%s%d", owner, i)
			l, err := c.TryLock(context.Background(), key, 10*time.Second, opts...)
			require.NoError(t, err)
			deleteHeld(t, key, srv[4]) // master 4 lost the key: the extension retakes it
			require.NoError(t, l.Extend(context.Background(), 10*time.Second))
			require.NoError(t, l.Release(context.Background()))
			require.NoError(t, c.Close()) // the release's deletes, and a retake left behind, have run
			for _, s := range srv {
				n, _ := redis.Int(do(t, s, "EXISTS", stored(key)), nil)
				require.Zero(t, n, "owner %q, run %d: %s holds the released lock again", owner, i, s.Addr())
			}
		}
	}
}

// An Extend is ordered after the lock's requests still on their way: an
// acquire that lands after the quorum answered, on a master the extension
// would otherwise reach first and find without the key. With another
// master that lost the key, those refusals made a held lock lost. The
// extension waits only for the requests sent before it: the retakes it
// starts wait for its own answers.
func TestIntegration_ExtendWaitsForTheAcquisitionStillOnItsWay(t *testing.T) {
	srv := masters(t, 5)
	ms := drivers(t, srv)
	var late atomic.Bool
	ms[3] = &lateAcquire{Master: ms[3], late: &late, delay: 300 * time.Millisecond}
	ms[4] = &lateAcquire{Master: ms[4], late: &late, delay: 600 * time.Millisecond}
	c, err := New(ms, suite(WithRestartGuard(0), WithLogger(quiet()), WithNodeTimeout(time.Second), WithCloseDrivers())()...)
	require.NoError(t, err)
	ctx := context.Background()
	l, err := c.TryLock(ctx, "warm", 10*time.Second) // connections up, scripts cached; a TTL that leaves the node timeout whole
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))

	late.Store(true)
	l, err = c.TryLock(ctx, "k", 10*time.Second) // masters 0 to 2 grant; 3 and 4 get the acquire late
	require.NoError(t, err)
	late.Store(false)
	require.ElementsMatch(t, []int{0, 1, 2}, l.Granted())
	deleteHeld(t, "k", srv[2]) // master 2 lost the key
	// Master 3's acquire returns first, and its extension makes the
	// quorum; the retakes start while master 4's acquire is still out.
	require.NoError(t, l.Extend(ctx, 10*time.Second), "the lock holds on masters 0, 1, 3 and 4")
	require.Eventually(t, func() bool {
		for _, s := range srv {
			if getString(t, s, "k") != l.Token() {
				return false
			}
		}
		return true
	}, 2*time.Second, 10*time.Millisecond, "every master holds the lock: 3 and 4 from the acquire, 2 retaken")
	require.NoError(t, l.Release(ctx))
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits forever: an extension and a retake wait for each other")
	}
}

// lateAcquire is a driver.Master whose acquires go out delay late while late is set.
type lateAcquire struct {
	driver.Master
	late  *atomic.Bool
	delay time.Duration
}

func (m *lateAcquire) Start(ctx context.Context, call driver.Call, done driver.Done) {
	if call.Script == nil || call.Script.Name != "acquire" || !m.late.Load() {
		m.Master.Start(ctx, call, done)
		return
	}
	go func() {
		time.Sleep(m.delay)
		m.Master.Start(ctx, call, done)
	}()
}

// A Release whose ctx is done before it begins changes nothing and says
// so: the lock still holds, on every master as in its own state.
func TestIntegration_ReleaseWithADoneContext_ChangesNothing(t *testing.T) {
	srv := masters(t, 3)
	c := client(t, srv)
	l, err := c.TryLock(context.Background(), "k", 10*time.Second)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, s := range srv {
			if getString(t, s, "k") != l.Token() {
				return false
			}
		}
		return true
	}, 2*time.Second, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = l.Release(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "not attempted")
	assert.NoError(t, l.Err())
	assert.Greater(t, l.Validity(), 9*time.Second)
	time.Sleep(20 * time.Millisecond)
	for _, s := range srv {
		assert.Equal(t, l.Token(), getString(t, s, "k"), "%s: the lock must be as it was", s.Addr())
	}
	err = l.Extend(ctx, 10*time.Second)
	require.ErrorIs(t, err, context.Canceled)
	assert.NoError(t, l.Err(), "an extension never attempted loses nothing")

	require.NoError(t, l.Release(context.Background()))
	require.NoError(t, c.Close())
	for _, s := range srv {
		assert.Empty(t, getString(t, s, "k"))
	}
}

// Node timeouts come from the configured clock: a client on a clock far
// from the real one still gives each master its full timeout.
func TestIntegration_NodeTimeoutsUseTheConfiguredClock(t *testing.T) {
	srv := masters(t, 3)
	clk := clock.NewFake(time.Unix(1_000_000, 0)) // decades before the real now
	c := client(t, srv, WithClock(clk))
	l, err := c.TryLock(context.Background(), "k", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(context.Background()))
}

// A fresh cluster refuses a lock for one guard window with its own error,
// inside ErrNotObtained, that says when a master votes and names the
// masters in its detail: not the
// plain refusal that means another worker holds the key.
func TestIntegration_QuarantineHasItsOwnError(t *testing.T) {
	srv := masters(t, 3)
	c, err := NewFromAddrs(urls(srv), suite(WithLogger(quiet()), WithRestartGuard(time.Minute))()...)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.TryLock(context.Background(), "k", 10*time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, ErrQuarantined)
	assert.NotErrorIs(t, err, ErrHeld)
	named := 0
	for _, s := range srv {
		if strings.Contains(detail(t, err), s.Addr()) {
			named++
		}
	}
	assert.GreaterOrEqual(t, named, c.Quorum(), "the quarantined masters are named: %v", err)
	assert.Contains(t, err.Error(), "votes in")

	other := client(t, srv)
	l, err := other.TryLock(context.Background(), "held", 10*time.Second)
	require.NoError(t, err)
	_, err = other.TryLock(context.Background(), "held", 10*time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	assert.NotErrorIs(t, err, ErrQuarantined, "a held key is not quarantine")
	require.NoError(t, l.Release(context.Background()))
}

// records keeps the log records a client writes.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// warnings returns the text of the WARN records whose message contains msg.
func (r *records) warnings(msg string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		if rec.Level != slog.LevelWarn || !strings.Contains(rec.Message, msg) {
			continue
		}
		var b strings.Builder
		b.WriteString(rec.Message)
		rec.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
			return true
		})
		out = append(out, b.String())
	}
	return out
}

// A master that keeps failing while a quorum carries on is reported at WARN
// once, naming the failure and its fix, not on every call and not never.
func TestIntegration_DegradedMasterIsReportedOnce(t *testing.T) {
	srv := masters(t, 4)
	for _, tc := range []struct {
		name, kind, fix string
		start           func(t *testing.T) string
	}{
		{"password required", "NOAUTH", "password", func(t *testing.T) string {
			return redistest.Start(t, 1, redistest.Ephemeral, "--requirepass", "secret")[0].Addr()
		}},
		{"a replica given as a master", "READONLY", "replica", func(t *testing.T) string {
			return redistest.Start(t, 1, redistest.Ephemeral, "--replicaof", "127.0.0.1", strconv.Itoa(srv[0].Port))[0].Addr()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := tc.start(t)
			log := &records{}
			// A node timeout a stalled machine meets: the test is about what is
			// logged, not how fast the masters answer.
			c, err := NewFromAddrs(append(urls(srv), bad), suite(WithRestartGuard(0), WithNodeTimeout(250*time.Millisecond), WithLogger(slog.New(log)))()...)
			require.NoError(t, err)
			defer c.Close()
			for i := range 20 {
				l, err := c.TryLock(context.Background(), fmt.Sprintf("%s%d", tc.kind, i), 10*time.Second)
				require.NoError(t, err)
				require.NoError(t, l.Release(context.Background()))
			}
			require.NoError(t, c.Close())
			warns := log.warnings("master failing")
			require.Len(t, warns, 1, "one warning for the master that refuses every call: %q", warns)
			assert.Contains(t, warns[0], bad)
			assert.Contains(t, warns[0], "failure="+tc.kind)
			assert.Contains(t, warns[0], tc.fix)
		})
	}
}

// A master paused while locks come and go, and a client closed before it
// runs again: once it runs, nothing of those locks is left on it. What the
// client sent it before Close (acquires, and the deletes and tombstones
// that follow them) runs in order when it resumes.
func TestIntegration_PausedMaster_ClosedClient_LeavesNothingOnResume(t *testing.T) {
	srv := masters(t, 3)
	c, err := NewFromAddrs(urls(srv), suite(WithRestartGuard(0), WithLogger(quiet()))()...)
	require.NoError(t, err)
	_, err = c.Inspect(context.Background(), "warm") // connections up before the pause
	require.NoError(t, err)
	require.NoError(t, srv[0].Pause())
	t.Cleanup(func() { srv[0].Resume() })
	ctx := context.Background()
	for i := range 5 {
		l, err := c.TryLock(ctx, fmt.Sprintf("k%d", i), 10*time.Second)
		require.NoError(t, err, "two of three masters run")
		time.Sleep(2 * DefaultNodeTimeout) // held past the paused master's deadline
		require.NoError(t, l.Release(ctx))
	}
	c.Close()
	require.NoError(t, srv[0].Resume())
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := srv[0].Do("PING"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // what was queued runs
	assert.Empty(t, keysOn(t, srv[0], "k*"), "the resumed master keeps keys of released locks")
	for _, s := range srv[1:] {
		assert.Empty(t, keysOn(t, s, "k*"))
	}
}
