package clock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
)

func TestFake_NewTimer_NonPositiveDurationFiresAtOnce(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Nanosecond, -time.Hour} {
		t.Run(d.String(), func(t *testing.T) {
			f := clock.NewFake(start)
			// As with time.NewTimer, the value is ready before NewTimer
			// returns: no Advance and no scheduling delay.
			for i := range 50 {
				tm := f.NewTimer(d)
				_, ok := received(tm)
				require.True(t, ok, "try %d: NewTimer(%v) had no value ready", i, d)
			}
			assert.Zero(t, f.Timers())
			assert.Equal(t, start, f.Now())
		})
	}
}
