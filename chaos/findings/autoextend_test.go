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

// TestDo_AfterHealedRestarts_OneMasterDownKeepsTheLock: a lock held under
// Do while two masters restart empty, one after the other, must survive a
// third master being paused, with four of five up and nobody else asking
// for it. It does only if the extensions take the restarted masters back
// once they are trusted again; renewing the key only where the token still
// held it would leave the lock on a bare quorum of three, and the pause
// would end it. A lock taken afresh at that moment, the control, holds all
// five masters and survives the same pause.
func TestDo_AfterHealedRestarts_OneMasterDownKeepsTheLock(t *testing.T) {
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
			// Near the end of the guard window (1 s plus drift, which INFO's
			// whole seconds can stretch by up to two): the extensions below
			// wait for the master to be trusted and taken back.
			if !sleep(ctx, 2500*time.Millisecond) {
				return context.Cause(ctx)
			}
		}
		// The extensions take the restarted masters back, each after a
		// round that reached it in time: give them a few rounds.
		for range 20 {
			if held = holding(t, servers, key); len(held) == len(servers) {
				break
			}
			if !sleep(ctx, ttl/3) {
				return context.Cause(ctx)
			}
		}
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
	assert.Equal(t, []int{0, 1, 2, 3, 4}, held, "every master is up and trusted, and the extensions took the restarted ones back")
	assert.NotErrorIs(t, fnErr, redlock.ErrLockLost, "with n2 paused, four masters up and no contender, Do's function was told its lock was lost")
	assert.False(t, errors.Is(err, redlock.ErrLockLost), "Do returned %v", err)

	// The control: a lock taken now, on the same masters, survives the
	// same pause.
	l, err := c.Lock(ctx, key, ttl, redlock.WithAutoExtend())
	require.NoError(t, err)
	// Lock returns at quorum, and a master where the release before it had
	// not landed yet is taken back by an extension: wait for all five.
	require.Eventually(t, func() bool { return len(holding(t, servers, key)) == len(servers) },
		2*ttl, 10*time.Millisecond, "the control lock never held all five masters")
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
