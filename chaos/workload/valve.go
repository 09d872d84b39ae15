package workload

import (
	"context"
	"errors"
	"sync"
)

// valve lets the clients' operations through, or holds new ones off and
// waits for those in flight to finish.
type valve struct {
	mu      sync.Mutex
	shut    chan struct{} // non-nil while held off; closed when opened again
	busy    int
	drained chan struct{} // closed when busy reaches 0 while shut
}

// enter waits until the valve is open and counts one operation in. It
// returns false if ctx ended first.
func (v *valve) enter(ctx context.Context) bool {
	for {
		v.mu.Lock()
		if v.shut == nil {
			v.busy++
			v.mu.Unlock()
			return true
		}
		ch := v.shut
		v.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// leave counts one operation out.
func (v *valve) leave() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.busy--
	if v.busy == 0 && v.drained != nil {
		close(v.drained)
		v.drained = nil
	}
}

var errShut = errors.New("workload: clients are already held off")

// close holds new operations off and waits until those in flight are done.
func (v *valve) close(ctx context.Context) error {
	v.mu.Lock()
	if v.shut != nil {
		v.mu.Unlock()
		return errShut
	}
	v.shut = make(chan struct{})
	if v.busy == 0 {
		v.mu.Unlock()
		return nil
	}
	d := make(chan struct{})
	v.drained = d
	v.mu.Unlock()
	select {
	case <-d:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// open lets operations through again.
func (v *valve) open() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.shut != nil {
		close(v.shut)
		v.shut = nil
	}
	v.drained = nil
}
