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
	require.Len(t, l.recs, 1, "only the warning")
	assert.Equal(t, slog.LevelWarn, l.recs[0].Level)
	assert.Equal(t, "redlock: a warning", l.recs[0].Message)
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
