package workload

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/redlock"
)

// do makes one Do call. Its function holds the lock for HoldFor, several
// TTLs, while the library extends it, and writes to the shared set and the
// fenced store every Step. It reports whether it got the lock.
//
// Do's function finds its lock with redlock.FromContext, but the workload
// does not take the library's word for the fence: the hold's fence comes
// from FenceOf, read from the masters, and is checked against the lock's
// own. The hold ends when the function saw its ctx cancelled (the
// library's notice of a loss) or returned.
func (w *Workload) do(ctx context.Context, i, k int, rng *rand.Rand) bool {
	h := w.cfg.History
	start := h.Now()
	id := -1
	// The bound covers the wait, the hold, and a late write after a loss.
	dctx, cancel := context.WithTimeout(ctx, w.cfg.Wait+w.cfg.HoldFor+w.cfg.CatchBound)
	defer cancel()
	err := w.cfg.Clients[i].Do(dctx, w.cfg.Keys[0], w.cfg.TTL, func(fctx context.Context) error {
		id = w.hold(fctx, i, k, rng, start)
		if fctx.Err() != nil {
			return context.Cause(fctx)
		}
		return nil
	})
	if id < 0 {
		h.Attempt(history.Attempt{Client: i, Worker: k, Key: w.cfg.Keys[0], Start: start, End: h.Now(), Err: err})
		return false
	}
	h.UpdateHold(id, func(x *history.Hold) { x.ReleaseErr, x.Done = err, true })
	return true
}

// hold is Do's function: it records the hold, writes until HoldFor has
// passed or its ctx ends, and returns the hold's ID.
func (w *Workload) hold(ctx context.Context, i, k int, rng *rand.Rand, start time.Duration) int {
	h := w.cfg.History
	acquired := h.Now()
	token := h.LastToken(i) // Lock's last attempt, the one that got the lock
	h.Attempt(history.Attempt{Client: i, Worker: k, Key: w.cfg.Keys[0], Token: token, Start: start, End: acquired, OK: true})
	fence, masters, known := w.cfg.FenceOf(ctx, token)
	id := h.Acquire(history.Hold{
		Client: i, Worker: k, Key: w.cfg.Keys[0], Token: token, Fence: fence, Masters: masters,
		Acquired: acquired, Until: acquired + w.cfg.HoldFor, ByDo: true,
	})
	if !known {
		h.Notef("client %d: the fence of its Do hold could not be read from the masters; it makes no fenced writes", i)
	}
	for {
		before := w.cfg.Set.Read(w.cfg.Keys[0])
		if !sleep(ctx, time.Duration(rng.Int64N(int64(w.cfg.Pause)+1))) {
			break // the lock may be gone: no write
		}
		elem := w.elems.Add(1)
		w.cfg.Set.Write(w.cfg.Keys[0], append(before, elem))
		h.Ack(elem)
		if known {
			w.cfg.Store.Write(w.cfg.Keys[0], id, i, fence)
		}
		h.UpdateHold(id, func(x *history.Hold) { x.Element = elem })
		if h.Now()-acquired >= w.cfg.HoldFor {
			break
		}
		pause := w.cfg.Step/2 + time.Duration(rng.Int64N(int64(w.cfg.Step/2)+1))
		if !sleep(ctx, pause) {
			break
		}
	}
	stopped := h.Now()
	lost := errors.Is(context.Cause(ctx), redlock.ErrLockLost)
	h.UpdateHold(id, func(x *history.Hold) { x.Until, x.Lost = stopped, lost })
	if lost && known && w.cfg.LateWrite {
		w.lateWrite(ctx, id, i, fence)
	}
	h.UpdateHold(id, func(x *history.Hold) { x.Released = h.Now() })
	return id
}

// lateWrite waits, at most CatchBound, until a newer holder has written to
// the fenced store, then writes with the lost hold's fence.
func (w *Workload) lateWrite(ctx context.Context, id, i int, fence int64) {
	h := w.cfg.History
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.CatchBound)
	defer cancel()
	err := h.Await(wctx, func(r *history.Record) bool {
		for _, x := range r.Writes {
			if x.Accepted && x.Fence > fence {
				return true
			}
		}
		return false
	})
	if err != nil {
		h.Notef("client %d: no newer holder wrote within %v of its loss; no late write", i, w.cfg.CatchBound)
		return
	}
	ok := w.cfg.Store.Write(w.cfg.Keys[0], id, i, fence)
	h.Notef("client %d, told its lock was lost, writes late with fence %d: accepted %v", i, fence, ok)
}
