package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// worker takes the lock again and again until ctx ends, holds it for
// --hold (never past its validity), and releases it. While another worker
// holds the lock it waits in Lock, which wakes on the holder's release
// announcement, or retries with backoff while the masters are out of reach.
func (d *demo) worker(ctx context.Context, id int, c *redlock.Client) {
	for ctx.Err() == nil {
		l, err := c.Lock(ctx, d.cfg.key, d.cfg.ttl)
		switch {
		case ctx.Err() != nil:
			if l != nil {
				l.Release(context.WithoutCancel(ctx))
			}
			return
		case err != nil:
			d.tally.failed(err)
			d.out.printf("worker %d  stopped: %s", id, oneLine(err.Error()))
			return
		}
		d.hold(ctx, id, c, l)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.ttl)
		if err := l.Release(rctx); err != nil && !errors.Is(err, redlock.ErrLockNotHeld) {
			// Too few masters answered; the keys expire with their TTL.
			d.log.Debug("release failed", "worker", id, "fence", l.Fence(), "err", err)
		}
		cancel()
		// Step back a moment so that the others get their turn.
		pause(ctx, rand.N(d.cfg.hold/2+time.Millisecond))
	}
}

// hold counts this worker as a holder while it believes it has the lock:
// from the acquisition until --hold has passed or the validity ends,
// whichever is first.
func (d *demo) hold(ctx context.Context, id int, c *redlock.Client, l *redlock.Lock) {
	end := time.Now().Add(min(d.cfg.hold, l.Validity()))
	validity := l.Validity()
	ev := d.tally.acquired(l.Fence())
	defer d.tally.released()

	ictx, cancel := context.WithTimeout(ctx, d.cfg.hold)
	st, err := c.Inspect(ictx, d.cfg.key)
	cancel()
	nodes := "[?]"
	if err == nil {
		nodes = quorumMarks(st, l.Token())
	}
	note := ""
	if ev.resumedAfter > 0 {
		note = fmt.Sprintf("  <- a quorum again: first holder %v after the masters came back, %v without one",
			roundShort(ev.resumedAfter), roundShort(ev.outage))
	}
	if ev.overlap {
		note += "  !! another worker holds the lock too"
	}
	if ev.regressed {
		note += "  !! fence did not increase"
	}
	d.out.printf("worker %d  got the lock  fence %-16d  validity %-6v %s%s",
		id, l.Fence(), validity.Round(time.Millisecond), nodes, note)
	pause(ctx, time.Until(end))
}

// pause waits for d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
