package quorumlock_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quorumlock/quorumlock"
)

func TestValidity(t *testing.T) {
	d := quorumlock.Drift{Factor: 0.01, Margin: 2 * time.Millisecond}
	for _, tc := range []struct {
		name         string
		ttl, elapsed time.Duration
		drift        quorumlock.Drift
		want         time.Duration
	}{
		{"defaults", 10 * time.Second, 5 * time.Millisecond, d, 10*time.Second - 5*time.Millisecond - 100*time.Millisecond - 2*time.Millisecond},
		{"no drift", time.Second, 0, quorumlock.Drift{}, time.Second},
		{"margin only", time.Second, 0, quorumlock.Drift{Margin: time.Millisecond}, 999 * time.Millisecond},
		{"factor only", time.Second, 0, quorumlock.Drift{Factor: 0.5}, 500 * time.Millisecond},
		{"elapsed and drift eat it exactly", 100 * time.Millisecond, 97 * time.Millisecond, d, 0},
		{"negative", 10 * time.Millisecond, 50 * time.Millisecond, d, 10*time.Millisecond - 50*time.Millisecond - 100*time.Microsecond - 2*time.Millisecond},
		{"huge ttl saturates", math.MaxInt64, 0, quorumlock.Drift{Factor: 0}, math.MaxInt64},
		{"huge elapsed saturates", time.Second, math.MaxInt64, quorumlock.Drift{}, time.Second - math.MaxInt64},
		{"min elapsed saturates", time.Second, math.MinInt64, quorumlock.Drift{}, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, quorumlock.Validity(tc.ttl, tc.elapsed, tc.drift))
		})
	}
}

func TestDrift_Reserve(t *testing.T) {
	assert.Equal(t, 102*time.Millisecond, quorumlock.Drift{Factor: 0.01, Margin: 2 * time.Millisecond}.Reserve(10*time.Second))
	assert.Equal(t, time.Duration(0), quorumlock.Drift{Factor: math.NaN()}.Reserve(time.Second), "NaN factor reserves nothing")
	assert.Equal(t, time.Duration(math.MaxInt64), quorumlock.Drift{Factor: 0.99, Margin: math.MaxInt64}.Reserve(math.MaxInt64))
}

// FuzzValidity checks properties that hold for every input: no panic, the
// result never exceeds the TTL minus elapsed time, and more elapsed time or
// more drift never gives more validity.
func FuzzValidity(f *testing.F) {
	for _, s := range [][4]int64{
		{int64(10 * time.Second), int64(5 * time.Millisecond), 100, int64(2 * time.Millisecond)},
		{int64(time.Millisecond), 0, 0, 0},
		{math.MaxInt64, math.MinInt64, 9999, math.MaxInt64},
		{math.MinInt64, math.MaxInt64, 0, 0},
		{0, 0, 5000, 0},
		{1, -1, 1, -1},
	} {
		f.Add(s[0], s[1], uint16(s[2]), s[3])
	}
	f.Fuzz(func(t *testing.T, ttl, elapsed int64, factorBP uint16, margin int64) {
		factor := float64(factorBP%10000) / 10000 // [0, 1)
		if margin < 0 {
			margin = -(margin + 1) // the library validates margin >= 0
		}
		d := quorumlock.Drift{Factor: factor, Margin: time.Duration(margin)}
		v := quorumlock.Validity(time.Duration(ttl), time.Duration(elapsed), d)
		if ttl >= 0 && elapsed >= 0 && v > time.Duration(ttl)-time.Duration(elapsed) {
			t.Fatalf("validity %v exceeds ttl-elapsed %v", v, time.Duration(ttl-elapsed))
		}
		if elapsed < math.MaxInt64 {
			if later := quorumlock.Validity(time.Duration(ttl), time.Duration(elapsed+1), d); later > v {
				t.Fatalf("more elapsed time gave more validity: %v > %v", later, v)
			}
		}
		if margin < math.MaxInt64 {
			more := quorumlock.Drift{Factor: factor, Margin: time.Duration(margin + 1)}
			if w := quorumlock.Validity(time.Duration(ttl), time.Duration(elapsed), more); w > v {
				t.Fatalf("more drift gave more validity: %v > %v", w, v)
			}
		}
	})
}
