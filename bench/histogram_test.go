package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestHistogram_Empty_ReadsZero(t *testing.T) {
	var h Histogram
	assert.Zero(t, h.Count())
	assert.Zero(t, h.Quantile(0.5))
	assert.Zero(t, h.Mean())
	assert.Zero(t, h.Max())
}

func TestHistogram_Quantile_WithinHalfPercentOfExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	var xs []time.Duration
	for range 20000 {
		// Log-uniform from 1µs to 1s: the range the benchmarks see.
		d := time.Duration(float64(time.Microsecond) * math.Pow(10, r.Float64()*6))
		xs = append(xs, d)
		h.Record(d)
	}
	slices.Sort(xs)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
		exact := xs[max(int(q*float64(len(xs))+0.5), 1)-1]
		got := h.Quantile(q)
		assert.InEpsilon(t, float64(exact), float64(got), 0.005, "q=%v", q)
	}
	assert.Equal(t, xs[len(xs)-1], h.Max())
	assert.Equal(t, len(xs), h.Count())
}

func TestHistogram_SmallAndNegative_AreExact(t *testing.T) {
	var h Histogram
	h.Record(-5)
	h.Record(3)
	h.Record(200)
	assert.Equal(t, time.Duration(0), h.Quantile(0))
	assert.Equal(t, time.Duration(3), h.Quantile(0.5))
	assert.Equal(t, time.Duration(200), h.Quantile(1))
}

func TestHistogram_Merge_EqualsRecordingBoth(t *testing.T) {
	var a, b, both Histogram
	for i := range 1000 {
		d := time.Duration(i) * time.Microsecond
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
		both.Record(d)
	}
	a.Merge(&b)
	assert.Equal(t, both, a)
}

func TestHistIndex_BucketsAreMonotonicAndInRange(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 255, 256, 258, 511, 512, 1 << 20, 1<<40 + 12345, 1<<63 - 1, 1<<64 - 1} {
		i := histIndex(v)
		assert.Greater(t, i, prev, "v=%d", v)
		assert.Less(t, i, histBuckets, "v=%d", v)
		prev = i
	}
}
