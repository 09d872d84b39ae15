package redlock

import (
	"fmt"
	"strconv"
	"time"
)

// clockReading is one reading of a master's clock against the client's.
type clockReading struct {
	offset time.Duration // the master's clock minus the client's
	rtt    time.Duration // the round trip the reading took
}

// readClock reads TIME's reply, received over a round trip from sent to
// received on the client's clock. The master read its clock somewhere in
// that round trip; taken at its middle, the offset is off by at most half
// the round trip.
func readClock(sent, received time.Time, reply any) (clockReading, error) {
	xs, ok := reply.([]any)
	if e, isErr := reply.(error); isErr {
		return clockReading{}, e
	}
	if !ok || len(xs) != 2 {
		return clockReading{}, fmt.Errorf("TIME: unexpected reply %v", reply)
	}
	var n [2]int64
	for i, x := range xs {
		s, ok := x.(string)
		v, err := strconv.ParseInt(s, 10, 64)
		if !ok || err != nil || v < 0 {
			return clockReading{}, fmt.Errorf("TIME: unexpected reply %v", reply)
		}
		n[i] = v
	}
	rtt := received.Sub(sent)
	if rtt < 0 {
		return clockReading{}, fmt.Errorf("TIME: the client's clock went back %v", -rtt)
	}
	server := time.Unix(n[0], n[1]*int64(time.Microsecond))
	return clockReading{offset: server.Sub(sent.Add(rtt / 2)), rtt: max(rtt, time.Nanosecond)}, nil
}

// withinReserve reports whether an offset read over rtt may lie within the
// drift reserve: only an offset beyond it whatever the reading's error
// (half the round trip) is reported.
func withinReserve(offset, rtt, reserve time.Duration) bool {
	if offset < 0 {
		offset = -offset
	}
	return offset-rtt/2 <= reserve
}
