package bench

import (
	"syscall"
	"time"
	"unsafe"
)

// preciseTimer waits for a moment to the microsecond, with a kernel timer
// (timerfd on CLOCK_MONOTONIC) and a blocking read: time.Sleep rounds a
// sub-millisecond wait up to about a millisecond, which would turn a
// 250 µs network into a 1 ms one. It is used by one goroutine at a time.
type preciseTimer struct {
	fd int
}

// itimerspec is struct itimerspec of timerfd_settime(2).
type itimerspec struct {
	interval, value syscall.Timespec
}

const clockMonotonic = 1

func newPreciseTimer() (*preciseTimer, error) {
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return nil, errno
	}
	return &preciseTimer{fd: int(fd)}, nil
}

// sleep blocks for d. The thread blocks in read(2) without spinning; the Go
// runtime lends its processor to other goroutines meanwhile.
func (t *preciseTimer) sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	spec := itimerspec{value: syscall.NsecToTimespec(int64(d))}
	if _, _, errno := syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, uintptr(t.fd), 0,
		uintptr(unsafe.Pointer(&spec)), 0, 0, 0); errno != 0 {
		return errno
	}
	var expirations [8]byte
	for {
		_, err := syscall.Read(t.fd, expirations[:])
		if err != syscall.EINTR {
			return err
		}
	}
}

func (t *preciseTimer) Close() error { return syscall.Close(t.fd) }
