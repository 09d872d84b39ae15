package redlock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

func TestParseInfo(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		up         time.Duration
		id         string
		ok         bool
	}{
		{"both", "# Server\r\nrun_id:abc\r\nuptime_in_seconds:42\r\n", 42 * time.Second, "abc", true},
		{"no uptime", "# Server\r\nrun_id:abc\r\n", 0, "", false},
		{"negative", "uptime_in_seconds:-1\r\n", 0, "", false},
		{"garbage", "uptime_in_seconds:soon\r\n", 0, "", false},
		{"empty", "", 0, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, id, ok := parseInfo(tc.info)
			assert.Equal(t, tc.ok, ok)
			if tc.ok {
				assert.Equal(t, tc.up, up)
				assert.Equal(t, tc.id, id)
			}
		})
	}
}

// Redis truncates both ends of uptime_in_seconds to whole seconds, so a
// master may report 1 a moment after it started. The quarantine must last
// the whole window from the latest moment the master can have started.
func TestGuard_UptimeIsReadAsTheYoungestItCanBe(t *testing.T) {
	const window = 3 * time.Second
	for _, up := range []int{0, 1, 2, 5} {
		t.Run(fmt.Sprint(up), func(t *testing.T) {
			clk := clock.NewFake(time.Unix(1_700_000_000, 0))
			g := &guard{clock: clk, log: quiet(), window: func() time.Duration { return window }}
			g.observe("m", fmt.Sprintf("run_id:r\r\nuptime_in_seconds:%d\r\n", up), []any{}, 1)
			// The master may have started as late as (up-1)s ago, or now.
			age := max(time.Duration(up-1)*time.Second, 0)
			h := g.load()
			require.True(t, h.known)
			assert.False(t, h.trusted(clk.Now().Add(window-age-time.Millisecond), window),
				"trusted before a master started (up-1)s ago can have been up for the window")
			assert.True(t, h.trusted(clk.Now().Add(window-age), window))
		})
	}
}

// A master restarted just before a second boundary reports an uptime of 1
// within a few hundred milliseconds; its quarantine still lasts the window.
func TestIntegration_RestartGuard_LateInASecond(t *testing.T) {
	const window = 2 * time.Second
	srv := masters(t, 1)
	c := client(t, srv, WithRestartGuard(window))
	ctx := context.Background()
	_, err := c.Inspect(ctx, "k")
	require.NoError(t, err)

	// Restart at 0.8 s past a whole second of the wall clock.
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(1800 * time.Millisecond).Sub(now))
	require.NoError(t, srv[0].Kill())
	restarted := time.Now() // the new master starts after this
	require.NoError(t, srv[0].Restart(redistest.Ephemeral))

	// The client first sees the master once it says it has been up a second.
	// (With a quick restart that is after about 0.2 s, and taking the uptime
	// at its word would end the quarantine 0.8 s early.)
	for uptime(t, srv[0]) < 1 {
		require.Less(t, time.Since(restarted), window, "uptime_in_seconds never reached 1")
		time.Sleep(5 * time.Millisecond)
	}
	for i := 0; time.Since(restarted) < window-50*time.Millisecond; i++ {
		require.Less(t, i, 200)
		st, err := c.Inspect(ctx, "k")
		require.NoError(t, err)
		require.NoError(t, st.Nodes[0].Err)
		require.True(t, st.Nodes[0].Quarantined, "trusted %v after its restart", time.Since(restarted))
		time.Sleep(20 * time.Millisecond)
	}
}

func uptime(t *testing.T, s *redistest.Server) int {
	t.Helper()
	up, err := s.Uptime()
	require.NoError(t, err)
	return up
}

// An answer read from an older connection but recorded late (its goroutine
// held up between the reply and observe) must not undo what a newer
// connection saw: the master restarted in between.
func TestGuard_AnOlderConnectionsLateAnswerIsDropped(t *testing.T) {
	const window = 10 * time.Second
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	g := &guard{clock: clk, log: quiet(), window: func() time.Duration { return window }}
	g.observe("m", "run_id:old\r\nuptime_in_seconds:5000\r\n", []any{}, 4)
	require.True(t, g.load().trusted(clk.Now(), window))

	g.observe("m", "run_id:new\r\nuptime_in_seconds:0\r\n", []any{}, 5) // restarted
	g.observe("m", "run_id:old\r\nuptime_in_seconds:5000\r\n", []any{}, 4)
	h := g.load()
	assert.Equal(t, "new", h.runID)
	assert.False(t, h.trusted(clk.Now(), window), "the restarted master is still in quarantine")

	g.observe("m", "run_id:new\r\nuptime_in_seconds:3\r\n", []any{}, 6)
	assert.Equal(t, uint64(6), g.seen.Load())
	assert.False(t, g.load().trusted(clk.Now(), window))
}
