package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestHistogram_Quantiles_WithinBucketWidthOfExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h, a, b histogram
	var all []time.Duration
	for i := range 20000 {
		// Log-uniform from 10µs to 1s, as latencies spread.
		d := time.Duration(float64(10*time.Microsecond) * math.Pow(1e5, r.Float64()))
		all = append(all, d)
		h.record(d)
		if i%2 == 0 {
			a.record(d)
		} else {
			b.record(d)
		}
	}
	a.merge(&b)
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := all[int(q*float64(len(all)))-1]
		got := h.quantile(q)
		assert.InEpsilon(t, float64(exact), float64(got), 1.0/histSub+0.001, "p%v", q*100)
		assert.Equal(t, got, a.quantile(q), "merged p%v", q*100)
	}
	assert.Equal(t, all[len(all)-1], h.quantile(1))
	assert.Equal(t, uint64(len(all)), h.count())
}

func TestHistogram_Empty_ReportsZero(t *testing.T) {
	var h histogram
	assert.Zero(t, h.quantile(0.99))
	assert.Zero(t, h.mean())
}

func TestBucketOf_EveryScale_ValueWithinItsBucket(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 129, 255, 256, 1000, 123456789, 1 << 40, 1<<63 - 1} {
		b := bucketOf(v)
		assert.Less(t, b, histBuckets, "v=%d", v)
		assert.LessOrEqual(t, v, bucketHigh(b), "v=%d", v)
		if b > 0 {
			assert.Greater(t, v, bucketHigh(b-1), "v=%d", v)
		}
	}
}
