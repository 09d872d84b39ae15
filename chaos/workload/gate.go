package workload

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// Gate is where a scenario can freeze a holder inside its critical section:
// after the holder checked its validity, before it writes. A frozen holder
// stands for a client process that was paused (GC, SIGSTOP, swap) at the
// worst moment, with its watchdog paused too, since it makes no extension.
type Gate struct {
	mu   sync.Mutex
	want *catch
}

type catch struct {
	pred func(history.Hold) bool
	got  chan *Caught // buffered: the holder never blocks on it
}

// Caught is a holder frozen at the gate.
type Caught struct {
	// Hold is the holder as it was when caught.
	Hold   history.Hold
	resume chan struct{}
	once   sync.Once
}

// Resume lets the holder go on: it writes, extends its lock (which tells it
// whether it still holds it) and releases.
func (c *Caught) Resume() { c.once.Do(func() { close(c.resume) }) }

// ErrCatchPending is returned by Catch while another Catch waits.
var ErrCatchPending = errors.New("workload: a catch is already pending")

// Catch waits until a holder for which pred is true reaches the gate,
// freezes it there and returns it. The caller must Resume it. Only one
// Catch may wait at a time.
func (g *Gate) Catch(ctx context.Context, pred func(history.Hold) bool) (*Caught, error) {
	c := &catch{pred: pred, got: make(chan *Caught, 1)}
	g.mu.Lock()
	if g.want != nil {
		g.mu.Unlock()
		return nil, ErrCatchPending
	}
	g.want = c
	g.mu.Unlock()
	select {
	case got := <-c.got:
		return got, nil
	case <-ctx.Done():
		g.mu.Lock()
		taken := g.want != c
		if !taken {
			g.want = nil
		}
		g.mu.Unlock()
		if taken { // a holder was caught as ctx ended: let it go
			(<-c.got).Resume()
		}
		return nil, ctx.Err()
	}
}

// point is called by every holder at the gate. If a Catch waits for it, the
// holder is frozen until resumed, ctx is done, or bound passes, and point
// reports true.
func (g *Gate) point(ctx context.Context, h history.Hold, bound time.Duration) bool {
	g.mu.Lock()
	c := g.want
	if c == nil || !c.pred(h) {
		g.mu.Unlock()
		return false
	}
	g.want = nil
	caught := &Caught{Hold: h, resume: make(chan struct{})}
	c.got <- caught // under the lock, so a Catch giving up finds it
	g.mu.Unlock()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-caught.resume:
	case <-ctx.Done():
	case <-t.C:
	}
	return true
}
