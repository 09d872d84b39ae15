package scripts

import (
	"strconv"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// Acquire is one run of acquire.lua: take the key for Token, or add a hold
// to a reentrant lock of the same Owner.
type Acquire struct {
	Key   string
	Token string
	TTL   time.Duration
	Owner string        // "" for a plain lock
	Keep  time.Duration // how long a new fencing counter lives, beyond the TTL
	From  string        // a hand-over: the plain lock's token the key passes from, or ""
	// Propose is the client's proposal for a new count, the same for every
	// master of one attempt, so that their counters agree (see proposed in
	// lib.lua); 0 proposes nothing.
	Propose int64
	// Waiter, when not "", takes the key where it heads the queue, and
	// queues on a refusal (see The queue in acquire.lua): at Ticket, with a
	// place that lasts Lease unless renewed; with Lease 0 it queues nowhere.
	Waiter string
	Ticket int64
	Lease  time.Duration
}

// Call returns the run on a master. A plain acquire that does not wait
// sends only the arguments it needs (see acquire.lua): each costs the master
// time on the lock's busiest call.
func (a Acquire) Call(s *Set, n Names) driver.Call {
	k := n.OfToken(a.Key, a.Token)
	if a.Owner == "" && a.From == "" && a.Waiter == "" {
		kv := []string{ // the keys, then the arguments: one allocation
			k.Lock(), k.Fence(), k.Floor(), k.Void(a.Token), k.Stamp(), k.Queue(), k.Leases(),
			a.Token, s.ms(a.TTL), proposal(a.Propose),
		}
		return driver.Call{Script: s.Acquire, Keys: kv[:7:7], Args: kv[7:]}
	}
	ticket, lease := "", ""
	if a.Waiter != "" && a.Lease > 0 {
		ticket, lease = strconv.FormatInt(a.Ticket, 10), s.ms(a.Lease)
	}
	kv := []string{
		k.Lock(), k.Fence(), k.Floor(), k.Void(a.Token), k.Stamp(), k.Queue(), k.Leases(),
		a.Token, s.ms(a.TTL), proposal(a.Propose), a.Owner, s.ms(a.TTL + a.Keep), a.From, a.Waiter, ticket, lease,
	}
	if a.Waiter != "" { // the waiter's tombstone (see leave.lua)
		keys := append(kv[:7:7], k.Void(a.Waiter))
		return driver.Call{Script: s.Acquire, Keys: keys, Args: kv[7:]}
	}
	return driver.Call{Script: s.Acquire, Keys: kv[:7:7], Args: kv[7:]}
}

// proposal renders a proposal as the script reads it: "" for none.
func proposal(p int64) string {
	if p <= 0 {
		return ""
	}
	return strconv.FormatInt(p, 10)
}

// Grant is a master's answer to an Acquire.
type Grant struct {
	OK       bool
	Counter  int64 // the key's fencing counter, when OK
	TookOver bool  // a hand-over found the lock it takes over here and replaced it
	// PTTL is the holder's remaining TTL when not OK: a duration, NoExpiry,
	// NoKey, or RolledBack when the attempt's tombstone refused it.
	PTTL time.Duration
	// Holder is who holds the key when not OK: a plain lock's token,
	// "owner:<owner>" for a reentrant one, Unknown for a key of another
	// kind, "" when none (RolledBack).
	Holder string
	// Head is the waiter at the head of the key's queue when not OK, "" when
	// nobody queues there; Rank is the Acquire's waiter's place in it, 0 at
	// the head, -1 when it does not queue there.
	Head string
	Rank int64
	// Permits is the number of permits the key's record names, when PTTL is
	// PermitsDiffer.
	Permits int64
}

// Unknown is the holder of a key that holds no lock of this library.
const Unknown = "?"

// DecodeGrant reads acquire.lua's reply: {1, counter} or {1, counter, 1}
// when granted, {0, PTTL, holder, head, rank} or {0, -3} when not.
func DecodeGrant(v any) (Grant, error) {
	xs, err := array(v, 2)
	if err != nil {
		return Grant{}, err
	}
	ok, err := integer(xs[0])
	if err != nil {
		return Grant{}, err
	}
	num, err := integer(xs[1])
	if err != nil {
		return Grant{}, err
	}
	if ok == 1 {
		g := Grant{OK: true, Counter: num}
		if len(xs) > 2 {
			took, _ := integer(xs[2])
			g.TookOver = took == 1
		}
		return g, nil
	}
	g := Grant{PTTL: time.Duration(num) * time.Millisecond, Rank: -1}
	if len(xs) > 2 {
		g.Holder, _ = str(xs[2])
	}
	if len(xs) > 3 {
		g.Head, _ = str(xs[3])
	}
	if len(xs) > 4 {
		if r, err := integer(xs[4]); err == nil {
			g.Rank = r
		}
	}
	if len(xs) > 5 {
		g.Permits, _ = integer(xs[5])
	}
	return g, nil
}
