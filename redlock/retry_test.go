package redlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// After a split vote, a waiter retries within a short window that doubles
// with each split in a row, up to the wait the split cut short, and never
// waits less than within the first window.
func TestSplitDelay(t *testing.T) {
	const first = 6 * time.Millisecond
	for _, tc := range []struct {
		splits   int
		limit    time.Duration
		min, max time.Duration // the wait is in [min, max)
	}{
		{1, time.Second, 0, first},
		{2, time.Second, 0, 2 * first},
		{3, time.Second, 0, 4 * first},
		{5, time.Second, 0, 16 * first},
		{8, time.Second, 0, 128 * first},
		{9, time.Second, time.Second, time.Second + 1},
		{1000, time.Second, time.Second, time.Second + 1},
		{1, 0, 0, first},
		{2, 0, 0, first}, // a limit below the first window: never less than within it
		{3, first, first, first + 1},
		{2, 2 * first, 2 * first, 2*first + 1},
	} {
		for range 200 {
			d := splitDelay(first, tc.splits, tc.limit)
			if !assert.True(t, d >= tc.min && d < tc.max, "split %d, limit %v: %v not in [%v, %v)", tc.splits, tc.limit, d, tc.min, tc.max) {
				break
			}
		}
	}
}
