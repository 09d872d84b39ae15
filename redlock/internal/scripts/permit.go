package scripts

import (
	"strconv"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// Permit is one run of permit.lua: take one of the Permits permits of a
// semaphore's Key for Token. It answers as Acquire does (Grant), so that a
// permit is voted on, rolled back and fenced as a lock is.
type Permit struct {
	Key     string
	Token   string
	TTL     time.Duration
	Permits int
	Propose int64 // as Acquire's
	// Waiter, Ticket and Lease are Acquire's: a waiter takes a free permit
	// where its rank in the queue is below the free permits, and queues on
	// a refusal.
	Waiter string
	Ticket int64
	Lease  time.Duration
}

// Call returns the run on a master.
func (p Permit) Call(s *Set, n Names) driver.Call {
	k := n.OfToken(p.Key, p.Token)
	ticket, lease, waiterVoid := "", "", k.Void(p.Token)
	if p.Waiter != "" && p.Lease > 0 {
		ticket, lease, waiterVoid = strconv.FormatInt(p.Ticket, 10), s.ms(p.Lease), k.Void(p.Waiter)
	}
	return driver.Call{Script: s.Permit,
		Keys: []string{k.Lock(), k.Permits(), k.Floor(), k.Void(p.Token), k.Stamp(), k.Queue(), k.Leases(), waiterVoid},
		Args: []string{p.Token, s.ms(p.TTL), strconv.Itoa(p.Permits), proposal(p.Propose), p.Waiter, ticket, lease},
	}
}

// PermitExtend is one run of permitextend.lua: set the TTL of a permit
// Token holds. It answers as Extend does.
type PermitExtend struct {
	Key     string
	Token   string
	TTL     time.Duration
	Permits int
}

// Call returns the run on a master.
func (e PermitExtend) Call(s *Set, n Names) driver.Call {
	k := n.Of(e.Key)
	return driver.Call{Script: s.PermitExtend, Keys: []string{k.Lock(), k.Permits()},
		Args: []string{e.Token, s.ms(e.TTL), strconv.Itoa(e.Permits)}}
}

// PermitCall returns the run of permitrelease.lua on a master: give back
// a permit Token holds, or undo a failed attempt. It answers as Call's run
// does; Owner and Keep do not apply to a permit.
func (r Release) PermitCall(s *Set, n Names) driver.Call {
	k := n.OfToken(r.Key, r.Token)
	tomb, sharded, fence, rollback := "", "", "", ""
	if r.Rollback || r.Tombstone {
		tomb = ms(r.TTL)
	}
	if r.Sharded {
		sharded = "1"
	}
	if r.Fence != 0 {
		fence = strconv.FormatInt(r.Fence, 10)
	}
	waiter, ticket, lease, waiterVoid := "", "", "", k.Void(r.Token)
	if r.Rollback {
		rollback = "1"
		if r.Waiter != "" && r.Lease > 0 {
			waiter, ticket, lease, waiterVoid = r.Waiter, strconv.FormatInt(r.Ticket, 10), ms(r.Lease), k.Void(r.Waiter)
		}
	}
	return driver.Call{Script: s.PermitRelease,
		Keys: []string{k.Lock(), k.Void(r.Token), k.Queue(), k.Leases(), k.Permits(), k.Floor(), waiterVoid},
		Args: []string{r.Token, k.Channel(), tomb, sharded, fence, waiter, ticket, lease, rollback},
	}
}

// PermitCall returns the run of permitfence.lua on a master: raise the
// node's fence floor to Fence where Token holds a permit of Key. It
// answers as Call's run does; Owner and Keep do not apply to a permit.
func (f Fence) PermitCall(s *Set, n Names) driver.Call {
	k := n.Of(f.Key)
	return driver.Call{Script: s.PermitFence, Keys: []string{k.Lock(), k.Floor()},
		Args: []string{f.Token, strconv.FormatInt(f.Fence, 10)}}
}
