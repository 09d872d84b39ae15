package scripts

import (
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// Leave is one run of leave.lua: take Waiter out of Key's waiting queue.
type Leave struct {
	Key    string
	Waiter string
	// Sharded announces the next head with SPUBLISH, as a Redis Cluster's
	// subscribers hear it, rather than PUBLISH.
	Sharded bool
	// Lease is the queue lease: the waiter's tombstone lasts as long, which
	// outlasts any acquire of the waiter still on its way.
	Lease time.Duration
}

// Call returns the run on a master.
func (l Leave) Call(s *Set, n Names) driver.Call {
	k := n.Of(l.Key)
	sharded := ""
	if l.Sharded {
		sharded = "1"
	}
	return driver.Call{Script: s.Leave, Keys: []string{k.Lock(), k.Queue(), k.Leases(), k.Void(l.Waiter)},
		Args: []string{l.Waiter, k.Channel(), sharded, ms(l.Lease)}}
}

// DecodeLeft reads leave.lua's reply: whether the waiter was queued.
func DecodeLeft(v any) (bool, error) {
	n, err := integer(v)
	return n == 1, err
}
