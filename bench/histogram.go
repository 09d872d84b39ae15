package bench

import (
	"math/bits"
	"time"
)

// Histogram records durations in log-linear buckets: 128 buckets per power
// of two, so a quantile read back is within 0.4% of the true value. Recording
// never allocates, which keeps the harness out of the benchmarks' allocs/op.
// The zero value is ready to use. It is not safe for concurrent use.
type Histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      time.Duration
	min, max time.Duration
}

const (
	histSubBits = 8
	histSub     = 1 << histSubBits // exact below this many nanoseconds
	histHalf    = histSub / 2
	histBuckets = histSub + (64-histSubBits)*histHalf
)

func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits // >= 1
	top := v >> shift                    // in [histHalf, histSub)
	return histSub + (shift-1)*histHalf + int(top-histHalf)
}

// histMid returns the middle of bucket i, in nanoseconds.
func histMid(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	j := i - histSub
	shift := j/histHalf + 1
	top := uint64(j%histHalf + histHalf)
	return top<<shift + (uint64(1)<<shift)/2
}

// Record adds one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	h.counts[histIndex(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	h.max = max(h.max, d)
	h.n++
	h.sum += d
}

// Merge adds every duration recorded in o.
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

// Max returns the largest duration recorded, exactly.
func (h *Histogram) Max() time.Duration { return h.max }

// Mean returns the mean, or 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Quantile returns the q-quantile (q in [0, 1]) by the nearest-rank method,
// or 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := time.Duration(histMid(i))
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}
