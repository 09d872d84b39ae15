package pool

import (
	"context"
	"errors"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/driver"
)

// gated tells the master's gate how a call, or a pipe's dial, that it let
// through with pass ended (see driver.Gate): with err nil or an error
// reply, the master answered; with a deadline, it may be silent; otherwise
// nothing is known of it, but a probe failed.
func (r *Redis) gated(pass driver.Pass, err error) {
	var re redis.Error
	var de driver.Error
	switch {
	case err == nil || errors.As(err, &re) || errors.As(err, &de):
		r.gate.Answered()
	case errors.Is(err, context.DeadlineExceeded) || netTimeout(err):
		r.gate.TimedOut(pass)
	default:
		r.gate.Failed(pass)
	}
}
