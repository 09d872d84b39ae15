package redlock

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// The offset is the master's clock against the middle of the round trip,
// off by at most half of it; TIME's reply is checked.
func TestCheck_ReadClock(t *testing.T) {
	sent := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) []any {
		m := sent.Add(d)
		return []any{fmt.Sprint(m.Unix()), fmt.Sprint(m.Nanosecond() / 1000)}
	}
	for _, tt := range []struct {
		name   string
		rtt    time.Duration
		reply  any
		offset time.Duration
		err    string
	}{
		{"in step, read mid-way", 10 * time.Millisecond, at(5 * time.Millisecond), 0, ""},
		{"ahead", 10 * time.Millisecond, at(2*time.Second + 5*time.Millisecond), 2 * time.Second, ""},
		{"behind", 4 * time.Millisecond, at(-time.Second), -time.Second - 2*time.Millisecond, ""},
		{"microseconds kept", 0, at(1500 * time.Microsecond), 1500 * time.Microsecond, ""},
		{"an error reply", time.Millisecond, errString("NOPERM no time"), 0, "NOPERM"},
		{"one number", time.Millisecond, []any{"1"}, 0, "unexpected reply"},
		{"not numbers", time.Millisecond, []any{"a", "b"}, 0, "unexpected reply"},
		{"negative", time.Millisecond, []any{"-1", "0"}, 0, "unexpected reply"},
		{"clock went back", -time.Millisecond, at(0), 0, "went back"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rd, err := readClock(sent, sent.Add(tt.rtt), tt.reply)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.offset, rd.offset)
			assert.Equal(t, max(tt.rtt, time.Nanosecond), rd.rtt)
		})
	}
}

// errString is an error reply.
type errString string

func (e errString) Error() string { return string(e) }

// An offset is beyond the drift reserve only when it is whatever the
// reading's error, half the round trip, either way.
func TestCheck_WithinReserve(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		offset, rtt, reserve time.Duration
		within               bool
	}{
		{0, 0, 0, true},
		{100 * ms, 0, 102 * ms, true},
		{102 * ms, 0, 102 * ms, true},
		{103 * ms, 0, 102 * ms, false},
		{-103 * ms, 0, 102 * ms, false},
		{103 * ms, 2 * ms, 102 * ms, true},
		{-103 * ms, 2 * ms, 102 * ms, true},
		{2 * time.Second, 10 * ms, 102 * ms, false},
	} {
		assert.Equal(t, tt.within, withinReserve(tt.offset, tt.rtt, tt.reserve), "%+v", tt)
	}
}

// The clock of a master on this machine reads a small offset over a short
// round trip.
func TestIntegration_Check_ClockOffsetIsSmallOnLoopback(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m := checkAt(t, srv[0].Addr())
	assert.Equal(t, CheckOK, finding(t, m, "clock").Level, describe(m))
	assert.Positive(t, m.RTT)
	assert.Less(t, m.RTT, time.Second)
	// Redis TIME has microseconds; this machine's clock is the master's.
	assert.Less(t, m.Offset.Abs(), 50*time.Millisecond+m.RTT/2)
}
