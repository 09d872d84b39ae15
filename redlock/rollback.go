package redlock

import (
	"context"
	"time"
)

// rollback deletes the attempt's token on every master it may have reached
// in any round: those that said yes or abstained, those that failed, and
// those still outstanding, each once all its acquires have returned, so a
// late yes is undone too. Where the token is not found, a tombstone for it
// stays for one TTL, so that an acquire still in the network cannot land
// afterwards. A roll-back announces nothing: the lock was never held.
//
// A master the roll-back cannot reach (it may be starting, with the
// acquire delayed on its way) is tried again, backing off, until it
// answers or the attempt's TTL has passed (until): after that, a late
// acquire leaves nothing that would not expire by itself.
//
// The caller waits up to one node timeout, but not for a silent master (see
// Client.silent): there the roll-back follows the master's answer in the
// background. What runs in the background Close stops and waits for.
func (c *Client) rollback(req request, rounds []round, timeout time.Duration, until time.Time) {
	var targets []int
	for i := range c.nodes {
		if !refusedThroughout(rounds, i) {
			targets = append(targets, i)
		}
	}
	if len(targets) == 0 {
		return
	}
	rb := req // a copy: only a roll-back that runs moves it to the heap
	rb.rollback = true
	awaited := make([]bool, len(c.nodes))
	waits := 0
	for _, i := range targets {
		if !c.silent(i) {
			awaited[i] = true
			waits++
		}
	}
	finished := make(chan int, len(targets))
	for _, i := range targets {
		c.spawn(func() {
			for _, r := range rounds {
				<-r.res.Done(i)
			}
			if refusedThroughout(rounds, i) { // stragglers that turned out to be refusals
				finished <- i
				return
			}
			c.rollbackOn(i, rb, timeout, until, finished)
		})
	}
	if waits == 0 {
		return
	}
	t := c.o.clock.NewTimer(timeout)
	defer t.Stop()
	for waits > 0 {
		select {
		case i := <-finished:
			if awaited[i] {
				waits--
			}
		case <-t.C():
			return
		}
	}
}

// rollbackOn rolls the attempt back on master i, and reports on finished
// after the first try; redelete tries again if that one failed.
func (c *Client) rollbackOn(i int, req request, timeout time.Duration, until time.Time, finished chan<- int) {
	ctx, cancel := c.o.clock.WithTimeout(context.Background(), timeout)
	_, err := awaitRelease(ctx, c.nodes[i], req)
	cancel()
	finished <- i
	if err != nil {
		c.redelete(i, req, err, timeout, until)
	}
}

// redelete runs req's release script on master i again after a try that
// failed with err, backing off, until one answers, the key's TTL has passed
// (until: after that, whatever landed has expired by itself), or the client
// closes. A delete of a key that may still be there is not abandoned at
// the first timeout. An error no retry fixes (an ACL, a replica) ends it at
// once.
func (c *Client) redelete(i int, req request, err error, timeout time.Duration, until time.Time) {
	wait := timeout
	for try := 1; ; try++ {
		if permanent(err) || !c.o.clock.Now().Add(wait).Before(until) {
			c.o.logger.Debug("redlock: delete failed; the key expires with its TTL",
				"addr", c.nodes[i].addr(), "key", req.key, "tries", try, "err", err)
			return
		}
		t := c.o.clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-c.closing:
			t.Stop()
			return
		}
		ctx, cancel := c.o.clock.WithTimeout(context.Background(), timeout)
		_, err = awaitRelease(ctx, c.nodes[i], req)
		cancel()
		if err == nil {
			return
		}
		wait = min(2*wait, time.Second)
	}
}

// refusedThroughout reports whether master i answered a refusal in every
// round. It reads a round's answer only once it is in.
func refusedThroughout(rounds []round, i int) bool {
	for _, r := range rounds {
		if !r.refused(i) { // a refusal, and in
			return false
		}
	}
	return true
}
