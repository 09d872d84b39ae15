package redlock

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without WithLogger the client logs nothing below WARN, and its warnings
// reach slog.Default() as it was when the client was made.
func TestDefaultLogger_WarnOnly(t *testing.T) {
	ctx := context.Background()
	srv := masters(t, 3)
	l := &logs{}
	was := slog.Default()
	slog.SetDefault(slog.New(l))
	c, err := NewFromAddrs(urls(srv), suite(WithRestartGuard(time.Minute))()...)
	slog.SetDefault(was) // the client took the handler as it was
	require.NoError(t, err)
	defer c.Close()

	assert.False(t, c.o.logger.Enabled(ctx, slog.LevelInfo))
	assert.False(t, c.o.logger.Enabled(ctx, slog.LevelDebug))
	assert.True(t, c.o.logger.Enabled(ctx, slog.LevelWarn))

	// Fresh masters: quarantined, which is logged at INFO, and a Lock that
	// waits, whose retries are logged at DEBUG.
	_, err = c.TryLock(ctx, "k", 10*time.Second)
	require.ErrorIs(t, err, ErrQuarantined)
	lctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = c.Lock(lctx, "k", 10*time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	c.o.logger.With("addr", "x").WithGroup("g").Warn("redlock: a warning")
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Len(t, l.recs, 2, "the Lock's one line on its wait, and the warning")
	assert.Equal(t, slog.LevelWarn, l.recs[0].Level)
	assert.Equal(t, "redlock: Lock waits for the restart guard", l.recs[0].Message)
	assert.Equal(t, slog.LevelWarn, l.recs[1].Level)
	assert.Equal(t, "redlock: a warning", l.recs[1].Message)
}

// A Lock that waits out the restart guard on fresh masters says so in one
// line, once, with why and when the first votes come; then it gets the lock.
func TestLock_WaitForTheGuard_SaidOnce(t *testing.T) {
	ctx := context.Background()
	srv := masters(t, 3)
	l := &logs{}
	c := client(t, srv, WithRestartGuard(1500*time.Millisecond), WithLogger(slog.New(l)), WithRetry(ConstantBackoff(20*time.Millisecond)))
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lk, err := c.Lock(lctx, "k", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, lk.Release(ctx))

	l.mu.Lock()
	defer l.mu.Unlock()
	var said []string
	for _, r := range l.recs {
		if r.Message != "redlock: Lock waits for the restart guard" {
			continue
		}
		assert.Equal(t, slog.LevelWarn, r.Level)
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "why" {
				said = append(said, a.Value.String())
			}
			return true
		})
	}
	require.Len(t, said, 1, "one line for the whole wait")
	assert.Contains(t, said[0], "quarantined after a restart, first votes in")
	assert.NotContains(t, said[0], "\n")
}

// A logger given is used as it is: every level it enables.
func TestWithLogger_SeesEverything(t *testing.T) {
	srv := masters(t, 3)
	l := &logs{}
	c := client(t, srv, WithRestartGuard(time.Minute), WithLogger(slog.New(l)))
	_, err := c.TryLock(context.Background(), "k", 10*time.Second)
	require.ErrorIs(t, err, ErrQuarantined)
	l.mu.Lock()
	defer l.mu.Unlock()
	infos := 0
	for _, r := range l.recs {
		if r.Level == slog.LevelInfo {
			infos++
		}
	}
	assert.Equal(t, 3, infos, "one INFO record of each new master")
}
