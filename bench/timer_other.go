//go:build !linux

package bench

import "time"

// preciseTimer is time.Sleep where there is no timerfd: sub-millisecond
// delays come out about a millisecond long.
type preciseTimer struct{}

func newPreciseTimer() (*preciseTimer, error) { return &preciseTimer{}, nil }

func (*preciseTimer) sleep(d time.Duration) error { time.Sleep(d); return nil }

func (*preciseTimer) Close() error { return nil }
