package redlocktest_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/redlocktest"
)

func TestMasters_SecondClientIsRefusedUntilRelease(t *testing.T) {
	ctx := context.Background()
	c, masters := redlocktest.Masters(t, 5)
	require.Len(t, masters.Addrs(), 5)
	assert.Equal(t, 5, c.Nodes())

	l, err := c.TryLock(ctx, "k", time.Minute)
	require.NoError(t, err)
	other := masters.Client()
	_, err = other.TryLock(ctx, "k", time.Minute)
	assert.ErrorIs(t, err, redlock.ErrNotObtained)

	require.NoError(t, l.Release(ctx))
	l2, err := other.TryLock(ctx, "k", time.Minute)
	require.NoError(t, err)
	assert.Greater(t, l2.Fence(), l.Fence(), "fences rise from one holder to the next")
	assert.NoError(t, l2.Release(ctx))
}

func TestGroup_Kill_MinorityDownLocks_MajorityDownRefuses_RestartLocksAgain(t *testing.T) {
	ctx := context.Background()
	c, masters := redlocktest.Masters(t, 5)
	require.NoError(t, masters.Kill(0))
	require.NoError(t, masters.Kill(1))
	require.NoError(t, masters.Kill(1), "killing a master that is down does nothing")

	l, err := c.TryLock(ctx, "k", time.Minute)
	require.NoError(t, err, "three of five masters are a quorum")
	require.NoError(t, l.Release(ctx))

	require.NoError(t, masters.Kill(2))
	_, err = c.TryLock(ctx, "k", time.Minute)
	assert.ErrorIs(t, err, redlock.ErrNotObtained, "two of five are not a quorum")

	require.NoError(t, masters.Restart(2))
	require.NoError(t, masters.Restart(2), "restarting a master that is up does nothing")
	l, err = c.TryLock(ctx, "k", time.Minute)
	require.NoError(t, err, "the restarted master votes again")
	assert.NoError(t, l.Release(ctx))
}

func TestGroup_Restart_KeepsTheKeys(t *testing.T) {
	ctx := context.Background()
	c, masters := redlocktest.Masters(t, 3)
	l, err := c.TryLock(ctx, "k", time.Minute)
	require.NoError(t, err)

	for i := range 3 {
		require.NoError(t, masters.Kill(i))
	}
	for i := range 3 {
		require.NoError(t, masters.Restart(i))
	}
	_, err = masters.Client().TryLock(ctx, "k", time.Minute)
	assert.ErrorIs(t, err, redlock.ErrNotObtained, "every master came back with the holder's key")
	assert.NoError(t, l.Extend(ctx, time.Minute), "the holder's token survived the restarts")
	assert.NoError(t, l.Release(ctx))
}

func TestMasters_KeysExpireInRealTime(t *testing.T) {
	ctx := context.Background()
	c, masters := redlocktest.Masters(t, 3)
	const ttl = time.Second
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := c.Lock(lctx, "k", ttl) // never released
	require.NoError(t, err)

	other := masters.Client()
	_, err = other.TryLock(ctx, "k", ttl)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "held before its TTL")
	// Bounded: the key is gone once its TTL has passed; allow for a
	// loaded machine, but no more than ten TTLs.
	deadline := time.Now().Add(10 * ttl)
	for {
		time.Sleep(ttl / 3)
		l, err := other.TryLock(ctx, "k", ttl)
		if err == nil {
			assert.NoError(t, l.Release(ctx))
			return
		}
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.True(t, time.Now().Before(deadline), "the key outlived its TTL: %v", err)
	}
}

func TestGroup_BadMasterNumber_IsInvalid(t *testing.T) {
	_, masters := redlocktest.Masters(t, 2)
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"kill -1", func() error { return masters.Kill(-1) }},
		{"kill 2", func() error { return masters.Kill(2) }},
		{"restart -1", func() error { return masters.Restart(-1) }},
		{"restart 2", func() error { return masters.Restart(2) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorIs(t, tc.do(), redlock.ErrInvalid)
		})
	}
}

func TestMasters_StoppedWhenTheTestEnds(t *testing.T) {
	var addrs []string
	t.Run("inner", func(t *testing.T) {
		c, masters := redlocktest.Masters(t, 3)
		addrs = masters.Addrs()
		l, err := c.TryLock(context.Background(), "k", time.Minute)
		require.NoError(t, err)
		_ = l // left held: the cleanup must not wait for it
	})
	require.Len(t, addrs, 3)
	for _, a := range addrs {
		conn, err := net.DialTimeout("tcp", a, time.Second)
		if err == nil {
			conn.Close()
		}
		assert.Error(t, err, "master %s still listens after the test", a)
	}
}

// fatalTB records Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	mu    sync.Mutex
	fatal string
}

func (f *fatalTB) Helper()           {}
func (f *fatalTB) Cleanup(fn func()) { f.TB.Cleanup(fn) }
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func TestMasters_NoMasters_FailsTheTest(t *testing.T) {
	for _, n := range []int{0, -1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			f := &fatalTB{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				redlocktest.Masters(f, n)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Masters did not return")
			}
			assert.Contains(t, f.fatal, "at least 1 is needed")
		})
	}
}

func TestMasters_ReleaseWakesAWaiter(t *testing.T) {
	ctx := context.Background()
	c, masters := redlocktest.Masters(t, 3)
	l, err := c.TryLock(ctx, "k", time.Minute)
	require.NoError(t, err)

	// The waiter's backoff alone would not retry before its ctx ends: only
	// the release announcement, over pub/sub, can wake it in time.
	waiter := masters.Client(redlock.WithRetry(redlock.ConstantBackoff(time.Hour)), redlock.WithQueueLease(time.Hour))
	got := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		w, err := waiter.Lock(wctx, "k", time.Minute)
		if err == nil {
			err = w.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(300 * time.Millisecond) // let the waiter try once and subscribe
	require.NoError(t, l.Release(ctx))
	select {
	case err := <-got:
		assert.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter never returned")
	}
}
