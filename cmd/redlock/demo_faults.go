package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// faults kills in-process masters one by one, from 20% to 50% of the run,
// until fewer than a quorum are up, and brings them all back at 70%.
//
// The masters come back with their data (see redlocktest.Servers.Restart),
// so a holder whose keys sat on a killed master is not undercut when it
// returns; a master that came back empty would need the restart guard's
// quarantine.
func (d *demo) faults(ctx context.Context, quorum int) {
	addrs := d.masters.Addrs()
	n := len(addrs)
	kills := killsToLoseQuorum(n, quorum)
	began := time.Now()
	at := func(frac float64) time.Duration { return time.Duration(frac * float64(d.cfg.duration)) }
	var killed []int
	for k := range kills {
		frac := 0.35
		if kills > 1 {
			frac = 0.2 + 0.3*float64(k)/float64(kills-1)
		}
		pause(ctx, at(frac)-time.Since(began))
		if ctx.Err() != nil {
			return
		}
		i := n - 1 - k
		if err := d.masters.Kill(i); err != nil {
			d.out.printf("---- %v", err)
			continue
		}
		killed = append(killed, i)
		up := d.masters.Up()
		label := fmt.Sprintf("%d of %d up", up, n)
		if up >= quorum {
			d.tally.enter(label, false, false)
			d.out.printf("---- master %d (%s) killed: %d of %d up, a quorum of %d can still form", i, addrs[i], up, n, quorum)
			continue
		}
		d.tally.enter(label, true, false)
		d.out.printf("---- master %d (%s) killed: %d of %d up, fewer than the quorum of %d: nobody can get the lock now", i, addrs[i], up, n, quorum)
	}
	restartAt := began.Add(at(0.7))
	if lost := time.Now(); d.masters.Up() < quorum {
		// Say, now and then, that the silence is the lock refusing to work
		// without a majority.
		for time.Until(restartAt) > time.Second && ctx.Err() == nil {
			pause(ctx, time.Second)
			d.out.printf("     no holder for %v: %d of %d masters up, %d needed; the workers keep trying",
				time.Since(lost).Round(100*time.Millisecond), d.masters.Up(), n, quorum)
		}
	}
	pause(ctx, time.Until(restartAt))
	if ctx.Err() != nil {
		return
	}
	var names []string
	for _, i := range killed {
		if err := d.masters.Restart(i); err != nil {
			d.out.printf("---- %v", err)
			continue
		}
		names = append(names, fmt.Sprint(i))
	}
	up := d.masters.Up()
	d.tally.enter("after the restart", false, up >= quorum)
	d.out.printf("---- masters %s restarted with their data: %d of %d up", strings.Join(names, ", "), up, n)
}
