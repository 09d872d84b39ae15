package main

import (
	"math"
	"math/bits"
	"time"
)

// histogram counts latencies in buckets 1/64 of a power of two wide, so a
// percentile is within about 1.6% of the truth at any scale, in fixed memory
// however long the run. The zero value is ready to use; it is not safe for
// concurrent use: keep one per goroutine and merge them.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    time.Duration
	max    time.Duration
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits // buckets per power of two
	// Values below 2*histSub ns are counted exactly; above, each power of
	// two up to 2^63 has histSub buckets.
	histBuckets = 2*histSub + (63-histSubBits-1)*histSub
)

// bucketOf returns the bucket that counts v nanoseconds.
func bucketOf(v uint64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits - 1 // >= 1
	return 2*histSub + (shift-1)*histSub + int(v>>shift) - histSub
}

// bucketHigh returns the largest value bucket b counts.
func bucketHigh(b int) uint64 {
	if b < 2*histSub {
		return uint64(b)
	}
	shift := (b-2*histSub)/histSub + 1
	mant := uint64((b-2*histSub)%histSub + histSub)
	return (mant+1)<<shift - 1
}

// record counts one latency; negative ones count as zero.
func (h *histogram) record(d time.Duration) {
	d = max(d, 0)
	h.counts[bucketOf(uint64(d))]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

// merge adds o's counts to h.
func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// count returns how many latencies were recorded.
func (h *histogram) count() uint64 { return h.n }

// quantile returns the latency at or below which a share q (0-1) of the
// recorded ones fall, rounded up to its bucket's top and capped at the
// largest seen; 0 when nothing was recorded.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(time.Duration(bucketHigh(b)), h.max)
		}
	}
	return h.max
}

// mean returns the average latency; 0 when nothing was recorded.
func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}
