package scripts

import (
	"math"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// Read is one run of read.lua: take a read hold of Key for Token. It
// answers as Acquire does (Grant), so that a read hold is voted on, rolled
// back and fenced as a lock is.
type Read struct {
	Key     string
	Token   string
	TTL     time.Duration
	Propose int64 // as Acquire's
}

// Call returns the run on a master.
func (r Read) Call(s *Set, n Names) driver.Call {
	k := n.OfToken(r.Key, r.Token)
	return driver.Call{Script: s.Read,
		Keys: []string{k.Lock(), k.Permits(), k.Floor(), k.Void(r.Token), k.Stamp(), k.Queue(), k.Leases()},
		Args: []string{r.Token, s.ms(r.TTL), proposal(r.Propose)},
	}
}

// Readers is the number of permits a read hold names to the permit
// scripts, which extend, release and fence it (see read.lua): no bound, as
// readers share a key.
const Readers = math.MaxInt32
