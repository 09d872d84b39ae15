package redlock

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/clock"
)

// silence tells a master that answers nothing at all (paused, or cut off
// with its connection open) from one that is slow or busy. It is silent when
// its last call was sent and got no reply within its timeout, and no call
// got an answer for a while (the window the caller asks with): a busy
// master, whose calls time out among others answered, is not. Any answer,
// a Redis error too, clears it. A call that never reached the master (a
// dial that timed out, a caller that cancelled) says nothing of it.
type silence struct {
	clock      clock.Clock
	unanswered atomic.Bool  // the last call sent got no reply
	answeredAt atomic.Int64 // when a call last got an answer (UnixNano on clock); newSilence counts as one
}

func newSilence(clk clock.Clock) *silence {
	s := &silence{clock: clk}
	s.answeredAt.Store(clk.Now().UnixNano())
	return s
}

// note records the outcome of one call.
func (s *silence) note(err error) {
	if s == nil {
		return
	}
	switch {
	case err == nil || code(err) != "":
		s.answeredAt.Store(s.clock.Now().UnixNano())
		s.unanswered.Store(false)
	case errors.Is(err, context.Canceled) || dialFailed(err):
	case timedOut(err):
		s.unanswered.Store(true)
	default: // refused, reset: the master fails fast, it does not keep anyone waiting
		s.unanswered.Store(false)
	}
}

// silent reports whether the master is silent: its last call got no reply,
// and nothing has answered for window.
func (s *silence) silent(window time.Duration) bool {
	if s == nil || !s.unanswered.Load() {
		return false
	}
	return s.clock.Since(time.Unix(0, s.answeredAt.Load())) >= window
}

// dialFailed reports whether err is a failure to connect: the call never
// reached the master.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
