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

func TestFake_Timer_Stop(t *testing.T) {
	tests := []struct {
		name     string
		prepare  func(f *clock.Fake, tm clock.Timer)
		wantStop bool
	}{
		{
			name:     "parked",
			prepare:  func(*clock.Fake, clock.Timer) {},
			wantStop: true,
		},
		{
			name: "fired and received",
			prepare: func(f *clock.Fake, tm clock.Timer) {
				f.Advance(time.Second)
				<-tm.C()
			},
			wantStop: false,
		},
		{
			// As time.Timer since Go 1.23: a value not yet received is
			// discarded, and Stop reports that it stopped the timer.
			name: "fired, value not received",
			prepare: func(f *clock.Fake, _ clock.Timer) {
				f.Advance(time.Second)
			},
			wantStop: true,
		},
		{
			name:     "already stopped",
			prepare:  func(_ *clock.Fake, tm clock.Timer) { tm.Stop() },
			wantStop: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := clock.NewFake(start)
			tm := f.NewTimer(time.Second)
			tt.prepare(f, tm)

			assert.Equal(t, tt.wantStop, tm.Stop())
			assert.Zero(t, f.Timers())
			f.Advance(time.Hour)
			_, ok := received(tm)
			assert.False(t, ok, "a value arrived after Stop")
			assert.False(t, tm.Stop(), "second Stop")
		})
	}
}

func TestFake_Timer_Reset(t *testing.T) {
	tests := []struct {
		name      string
		prepare   func(f *clock.Fake, tm clock.Timer)
		wantReset bool
	}{
		{
			name:      "parked",
			prepare:   func(*clock.Fake, clock.Timer) {},
			wantReset: true,
		},
		{
			name:      "stopped",
			prepare:   func(_ *clock.Fake, tm clock.Timer) { tm.Stop() },
			wantReset: false,
		},
		{
			name: "fired and received",
			prepare: func(f *clock.Fake, tm clock.Timer) {
				f.Advance(time.Second)
				<-tm.C()
			},
			wantReset: false,
		},
		{
			// As time.Timer since Go 1.23: Reset discards a stale value, so
			// the next receive sees only the new deadline.
			name: "fired, value not received",
			prepare: func(f *clock.Fake, _ clock.Timer) {
				f.Advance(time.Second)
			},
			wantReset: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := clock.NewFake(start)
			tm := f.NewTimer(time.Second)
			tt.prepare(f, tm)
			base := f.Now()

			assert.Equal(t, tt.wantReset, tm.Reset(3*time.Second))
			_, ok := received(tm)
			assert.False(t, ok, "a stale value survived Reset")
			assert.Equal(t, 1, f.Timers())

			f.Advance(3*time.Second - time.Nanosecond)
			_, ok = received(tm)
			assert.False(t, ok, "fired before the new deadline")

			f.Advance(time.Nanosecond)
			v, ok := received(tm)
			if assert.True(t, ok, "did not fire at the new deadline") {
				assert.Equal(t, base.Add(3*time.Second), v)
			}
		})
	}
}

func TestFake_Timer_ResetToZeroThenStop_DeliversNothing(t *testing.T) {
	f := clock.NewFake(start)
	for i := range 50 {
		tm := f.NewTimer(time.Hour)
		tm.Reset(0)
		assert.True(t, tm.Stop(), "try %d: Stop after Reset(0)", i)
		_, ok := received(tm)
		require.False(t, ok, "try %d: a value arrived after Stop", i)
	}
	assert.Zero(t, f.Timers())
}
