package histogram

import (
	"math/bits"
	"time"
)

const (
	// subBits sets the resolution: values below 1<<subBits are counted
	// exactly, and each power of two above is split into 1<<(subBits-1)
	// buckets.
	subBits = 8
	// exact is the number of buckets that each count a single value: 0 to
	// exact-1 nanoseconds.
	exact = 1 << subBits
	// perOctave is the number of buckets in each power of two from exact up.
	perOctave = exact / 2
	// buckets covers every non-negative time.Duration: the powers of two
	// from 1<<subBits to 1<<62 each take perOctave buckets.
	buckets = exact + (63-subBits)*perOctave
)

// Histogram counts durations. The zero value is an empty histogram, ready
// to use. It is not safe for concurrent use: give each goroutine its own
// and Merge them.
type Histogram struct {
	counts   [buckets]uint64
	n        uint64
	sum      time.Duration
	min, max time.Duration
}

// index returns the bucket that counts d, which must not be negative.
func index(d time.Duration) int {
	v := uint64(d)
	if v < exact {
		return int(v)
	}
	shift := bits.Len64(v) - subBits // >= 1
	top := v >> shift                // in [perOctave, exact)
	return exact + (shift-1)*perOctave + int(top-perOctave)
}

// mid returns the middle of bucket i: the value a quantile that falls in
// the bucket reads back.
func mid(i int) time.Duration {
	if i < exact {
		return time.Duration(i)
	}
	j := i - exact
	shift := j/perOctave + 1
	top := uint64(j%perOctave + perOctave)
	return time.Duration(top<<shift + (uint64(1)<<shift)/2)
}

// Record counts one duration. A negative duration, as a clock step can
// produce, counts as zero.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	h.counts[index(d)]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	h.max = max(h.max, d)
	h.n++
	h.sum += d
}

// Merge adds every duration counted in o to h, as if h had recorded them
// too. o is left unchanged.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count returns how many durations were recorded.
func (h *Histogram) Count() int { return int(h.n) }

// Mean returns the mean of the recorded durations, or 0 when there are none.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Min returns the smallest duration recorded, exactly, or 0 when there are
// none.
func (h *Histogram) Min() time.Duration { return h.min }

// Max returns the largest duration recorded, exactly, or 0 when there are
// none.
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns the q-quantile of the recorded durations, or 0 when
// there are none. q is clamped to [0, 1]. The answer stands for the
// duration of rank q·Count, rounded to the nearest whole rank and at least
// 1, in ascending order: the smallest and the largest rank read back Min and
// Max exactly, durations below 256ns are exact, and any other reads back as
// the middle of its bucket, within 1/256 of the duration itself and never
// outside [Min, Max].
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(q*float64(h.n) + 0.5)
	switch {
	case rank <= 1:
		return h.min
	case rank >= h.n:
		return h.max
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(max(mid(i), h.min), h.max)
		}
	}
	return h.max
}
