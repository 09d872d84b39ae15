package redlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/quorumlock/quorumlock/driver"
)

// pubsub is the check's subscription to the throwaway key's channel.
type pubsub struct {
	channel string
	sub     driver.Subscription
	err     error // why there is no subscription or it ended
	msgs    chan driver.Message
	done    chan struct{} // closed when the reader returns
	ok      bool          // the subscription was confirmed
	got     bool          // the release was heard
}

// listen subscribes to channel, and waits for the confirmation.
func (cy *cycle) listen(ctx context.Context, channel string) *pubsub {
	ps := &pubsub{channel: channel, msgs: make(chan driver.Message, 8), done: make(chan struct{})}
	sctx, cancel := cy.p.c.o.clock.WithTimeout(ctx, cy.p.step)
	defer cancel()
	ps.sub, ps.err = cy.m.subscribe(sctx)
	if ps.err != nil {
		close(ps.done)
		return ps
	}
	errc := make(chan error, 1)
	go func() {
		defer close(ps.done)
		for {
			msg, err := ps.sub.Receive()
			if err != nil {
				errc <- err
				return
			}
			select {
			case ps.msgs <- msg:
			default: // the check reads at most a few
			}
		}
	}()
	if err := ps.sub.Subscribe(channel); err != nil {
		ps.err = err
		return ps
	}
	ps.ok, ps.err = ps.await(cy.p, driver.Subscribed, errc)
	if ps.err == nil && !ps.ok {
		ps.err = errors.New("no confirmation")
	}
	return ps
}

// await waits up to p.step for a message of kind on the channel, or the
// end of the subscription.
func (ps *pubsub) await(p probe, kind driver.Kind, errc <-chan error) (bool, error) {
	t := p.c.o.clock.NewTimer(p.step)
	defer t.Stop()
	for {
		select {
		case m := <-ps.msgs:
			if m.Kind == kind && m.Channel == ps.channel {
				return true, nil
			}
		case err := <-errc:
			return false, err
		case <-t.C():
			return false, nil
		}
	}
}

// heard waits for the announcement of a release.
func (ps *pubsub) heard(p probe) {
	if !ps.ok || ps.got {
		return
	}
	t := p.c.o.clock.NewTimer(p.step)
	defer t.Stop()
	for {
		select {
		case m := <-ps.msgs:
			if m.Kind == driver.Published && m.Channel == ps.channel {
				ps.got = true
				return
			}
		case <-t.C():
			return
		}
	}
}

// report adds what the subscription and the release's announcement showed.
func (ps *pubsub) report(r *MasterReadiness, unannounced bool, fix string) {
	switch {
	case !ps.ok:
		r.add("pubsub", CheckWarn, fmt.Sprintf("cannot subscribe to %s (%v): waiters do not hear releases and poll with backoff", ps.channel, ps.err), fix)
	case unannounced:
		r.add("pubsub", CheckWarn, "the release could not announce itself on "+ps.channel+" (PUBLISH denied): waiters poll with backoff", fix)
	case !ps.got:
		r.add("pubsub", CheckWarn, "the release's announcement on "+ps.channel+" was not heard", "")
	default:
		r.add("pubsub", CheckOK, "a release is announced on "+ps.channel+" and heard", "")
	}
}

// close ends the subscription and waits for its reader.
func (ps *pubsub) close() {
	if ps.sub != nil {
		ps.sub.Close()
	}
	<-ps.done
}
