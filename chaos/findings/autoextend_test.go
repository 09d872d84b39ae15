package findings

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// TestDo_AfterHealedRestarts_OneMasterDownLosesTheLock: auto-extension
// renews the key only on the masters where the token still holds it, and
// never takes it again where it is gone. A lock held under Do therefore
// loses a master for good each time one restarts empty (or sleeps past the
// TTL, or held a contender's key when the lock was taken), even after that
// master is back and trusted. Two such faults, each healed, leave the lock
// on a bare quorum of three; then one master of five paused, with four up
// and nobody else asking for the lock, ends it. A lock taken afresh at that
// moment would hold all five masters and survive the pause.
//
// Scenario 12 of the suite chooses its faults among the masters that hold
// the lock for this reason. The test asserts what a Do user reads in the
// design's availability promise: with a majority of masters up and healthy,
// a held lock stays held.
func TestDo_AfterHealedRestarts_OneMasterDownLosesTheLock(t *testing.T) {
	requireUnfixed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	servers := redistest.Start(t, 5, redistest.Ephemeral)
	const key, ttl = "finding-autoextend", time.Second
	c, err := redlock.NewFromAddrs(redistest.Addrs(servers), // restart guard on: the default
		redlock.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer c.Close()

	var held []int
	var fnErr error
	err = c.Do(ctx, key, ttl, func(ctx context.Context) error {
		for _, n := range []int{4, 3} {
			if err := servers[n].Kill(); err != nil {
				return err
			}
			if err := servers[n].Restart(redistest.Ephemeral); err != nil {
				return err
			}
			// Past the guard window, which INFO's whole seconds can stretch
			// to two: the master is trusted again.
			if !sleep(ctx, 2500*time.Millisecond) {
				return context.Cause(ctx)
			}
		}
		held = holding(t, servers, key)
		if err := servers[2].Pause(); err != nil {
			return err
		}
		slept := sleep(ctx, ttl*3/2)
		if err := servers[2].Resume(); err != nil {
			return err
		}
		if !slept {
			fnErr = context.Cause(ctx)
			return fnErr
		}
		return nil
	})
	require.NotNil(t, held, "the faults before the pause went as planned")
	assert.Equal(t, []int{0, 1, 2}, held, "every master is up and trusted, and the lock is held on these only")
	assert.NotErrorIs(t, fnErr, redlock.ErrLockLost, "with n2 paused, four masters up and no contender, Do's function was told its lock was lost")
	assert.False(t, errors.Is(err, redlock.ErrLockLost), "Do returned %v", err)

	// The control: a lock taken now, on the same masters, survives the
	// same pause.
	l, err := c.Lock(ctx, key, ttl, redlock.WithAutoExtend())
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 2, 3, 4}, holding(t, servers, key))
	require.NoError(t, servers[2].Pause())
	sleep(ctx, ttl*3/2)
	require.NoError(t, servers[2].Resume())
	assert.NoError(t, l.Err(), "control: a fresh lock lost the same pause")
	assert.NoError(t, l.Release(ctx))
}

// holding lists the masters where the key holds a token.
func holding(t *testing.T, servers []*redistest.Server, key string) []int {
	t.Helper()
	var out []int
	for i, s := range servers {
		conn, err := redis.Dial("tcp", s.Addr())
		require.NoError(t, err)
		n, err := redis.Int(conn.Do("EXISTS", key))
		conn.Close()
		require.NoError(t, err)
		if n == 1 {
			out = append(out, i)
		}
	}
	return out
}

// sleep waits d, or reports false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
