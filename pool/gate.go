package pool

import (
	"errors"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/driver"
)

// gated tells the master's gate how a call, or a pipe's dial, that it let
// through with pass ended (see driver.Gate): with err nil or an error
// reply, the master answered.
func (r *Redis) gated(pass driver.Pass, err error) {
	var re redis.Error
	var de driver.Error
	r.gate.Left(pass, err == nil || errors.As(err, &re) || errors.As(err, &de), err)
}
