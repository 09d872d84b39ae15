package histogram

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxRelErr is the promised bound on a quantile's error relative to the
// duration it stands for.
const maxRelErr = 1.0 / 256

// rankOf returns the 0-based position in n sorted durations that Quantile(q)
// stands for.
func rankOf(q float64, n int) int {
	return min(max(int(q*float64(n)+0.5), 1), n) - 1
}

func record(ds ...time.Duration) *Histogram {
	h := new(Histogram)
	for _, d := range ds {
		h.Record(d)
	}
	return h
}

// logUniform returns n durations spread evenly in log scale over [lo, hi),
// as latencies spread.
func logUniform(seed uint64, n int, lo, hi time.Duration) []time.Duration {
	r := rand.New(rand.NewPCG(seed, 2))
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = time.Duration(float64(lo) * math.Pow(float64(hi)/float64(lo), r.Float64()))
	}
	return ds
}

func TestHistogram_Empty_ReadsZero(t *testing.T) {
	merged := new(Histogram)
	merged.Merge(new(Histogram))
	tests := []struct {
		name string
		h    *Histogram
	}{
		{"zero value", new(Histogram)},
		{"an empty one merged in", merged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.h
			assert.Zero(t, h.Count())
			assert.Zero(t, h.Mean())
			assert.Zero(t, h.Min())
			assert.Zero(t, h.Max())
			for _, q := range []float64{0, 0.5, 0.99, 1} {
				assert.Zero(t, h.Quantile(q), "q=%v", q)
			}
		})
	}
}

func TestHistogram_SmallDurations_AreExact(t *testing.T) {
	var all []time.Duration
	for d := range time.Duration(exact) {
		all = append(all, d)
	}
	tests := []struct {
		name string
		in   []time.Duration
		want []time.Duration // sorted, as Quantile should see them
	}{
		{"one", []time.Duration{7}, []time.Duration{7}},
		{"negative counts as zero", []time.Duration{-5, 3, 200}, []time.Duration{0, 3, 200}},
		{"every value below the exact limit", all, all},
		{"repeats", []time.Duration{9, 1, 9, 9, 255, 1}, []time.Duration{1, 1, 9, 9, 9, 255}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := record(tt.in...)
			for _, q := range []float64{0, 0.01, 0.25, 0.5, 0.75, 0.9, 0.99, 1} {
				assert.Equal(t, tt.want[rankOf(q, len(tt.want))], h.Quantile(q), "q=%v", q)
			}
			assert.Equal(t, len(tt.want), h.Count())
			assert.Equal(t, tt.want[0], h.Min())
			assert.Equal(t, tt.want[len(tt.want)-1], h.Max())
		})
	}
}

func TestHistogram_Quantile_WithinRelativeErrorOfExact(t *testing.T) {
	same := make([]time.Duration, 1000)
	for i := range same {
		same[i] = 12345678 * time.Nanosecond
	}
	var edges []time.Duration // both sides of every power of two
	for s := subBits; s < 63; s++ {
		edges = append(edges, 1<<s-1, 1<<s, 1<<s+1)
	}
	tests := []struct {
		name string
		in   []time.Duration
	}{
		{"log-uniform 1µs to 1s", logUniform(1, 20000, time.Microsecond, time.Second)},
		{"log-uniform 10µs to 1s, other seed", logUniform(7, 20000, 10*time.Microsecond, time.Second)},
		{"narrow, 10ms to 11ms", logUniform(3, 5000, 10*time.Millisecond, 11*time.Millisecond)},
		{"one large value repeated", same},
		{"powers of two to the largest duration", append(edges, math.MaxInt64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := record(tt.in...)
			sorted := slices.Sorted(slices.Values(tt.in))
			for _, q := range []float64{0, 0.001, 0.01, 0.5, 0.9, 0.99, 0.999, 1} {
				want := sorted[rankOf(q, len(sorted))]
				got := h.Quantile(q)
				assert.InEpsilon(t, float64(want), float64(got), maxRelErr, "q=%v: want %v, got %v", q, want, got)
				assert.GreaterOrEqual(t, got, h.Min(), "q=%v", q)
				assert.LessOrEqual(t, got, h.Max(), "q=%v", q)
			}
			assert.Equal(t, sorted[0], h.Quantile(0), "the smallest rank is exact")
			assert.Equal(t, sorted[len(sorted)-1], h.Quantile(1), "the largest rank is exact")
		})
	}
}

func TestHistogram_CountMeanMinMax_AreExact(t *testing.T) {
	tests := []struct {
		name           string
		in             []time.Duration
		count          int
		mean, min, max time.Duration
	}{
		{"one", []time.Duration{time.Second}, 1, time.Second, time.Second, time.Second},
		{"spread", []time.Duration{300, time.Millisecond, 3 * time.Second}, 3, (300 + time.Millisecond + 3*time.Second) / 3, 300, 3 * time.Second},
		{"negative counts as zero", []time.Duration{-time.Second, 4 * time.Second}, 2, 2 * time.Second, 0, 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := record(tt.in...)
			assert.Equal(t, tt.count, h.Count())
			assert.Equal(t, tt.mean, h.Mean())
			assert.Equal(t, tt.min, h.Min())
			assert.Equal(t, tt.max, h.Max())
		})
	}
}

func TestHistogram_Merge_EqualsRecordingBoth(t *testing.T) {
	ds := logUniform(5, 2000, 100*time.Nanosecond, 10*time.Second)
	tests := []struct {
		name string
		a, b []time.Duration
	}{
		{"interleaved", everyOther(ds, 0), everyOther(ds, 1)},
		{"into empty", nil, ds},
		{"from empty", ds, nil},
		{"both empty", nil, nil},
		{"the other holds the smallest", []time.Duration{time.Second}, []time.Duration{time.Microsecond}},
		{"the other holds the largest", []time.Duration{time.Microsecond}, []time.Duration{time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := record(tt.a...), record(tt.b...)
			bBefore := *b
			a.Merge(b)
			both := record(append(slices.Clone(tt.a), tt.b...)...)
			assert.Equal(t, *both, *a)
			assert.Equal(t, bBefore, *b, "the merged-in histogram is unchanged")
		})
	}
}

func everyOther(ds []time.Duration, from int) []time.Duration {
	var out []time.Duration
	for i := from; i < len(ds); i += 2 {
		out = append(out, ds[i])
	}
	return out
}

func TestHistogram_Record_DoesNotAllocate(t *testing.T) {
	h := new(Histogram)
	d := time.Duration(0)
	allocs := testing.AllocsPerRun(1000, func() {
		d = d*7 + 12345
		h.Record(d % time.Minute)
	})
	assert.Zero(t, allocs)
}

func TestIndex_EveryScale_InRangeMonotonicAndMidNear(t *testing.T) {
	var vs []time.Duration
	for s := range 63 {
		vs = append(vs, 1<<s-1, 1<<s, 1<<s+1, 1<<s+1<<s/3)
	}
	vs = append(vs, math.MaxInt64)
	slices.Sort(vs)
	prev := -1
	for _, v := range vs {
		i := index(v)
		require.Less(t, i, buckets, "v=%d", v)
		assert.GreaterOrEqual(t, i, prev, "v=%d: buckets grow with the value", v)
		prev = i
		if v < exact {
			assert.Equal(t, v, mid(i), "v=%d is counted exactly", v)
			continue
		}
		assert.InEpsilon(t, float64(v), float64(mid(i)), maxRelErr, "v=%d reads back as %d", v, mid(i))
		assert.Positive(t, mid(i), "v=%d: the middle does not overflow", v)
	}
	assert.Equal(t, buckets-1, index(math.MaxInt64), "the last bucket holds the largest duration")
}
