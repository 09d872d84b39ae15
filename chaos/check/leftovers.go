package check

import "time"

// KeyState is one lock key, or a key's waiting queue (no tokens), found on
// one master.
type KeyState struct {
	Node   int
	Key    string
	Tokens []string      // the token of a plain lock, or every hold's token of a reentrant one
	PTTL   time.Duration // the key's time to live; negative when it has none
}

// Residue is the result of checker C4's first half.
type Residue struct {
	Keys   int        // lock keys found on the masters that answered
	Failed []KeyState // keys that hold a failed attempt's token
	NoTTL  []KeyState // keys without an expiry, which would block the lock forever
}

// OK reports whether no failed attempt left its token behind and every key
// expires.
func (r Residue) OK() bool { return len(r.Failed) == 0 && len(r.NoTTL) == 0 }

// Leftovers is checker C4's residue half. Given the lock keys found on the
// masters once the faults healed and a TTL passed, and the tokens of every
// attempt that failed, it reports keys that still hold a failed attempt's
// token (a roll-back that never happened, or a key that outlived its TTL)
// and keys without an expiry.
func Leftovers(keys []KeyState, failed map[string]bool) Residue {
	r := Residue{Keys: len(keys)}
	for _, k := range keys {
		for _, t := range k.Tokens {
			if failed[t] {
				r.Failed = append(r.Failed, k)
				break
			}
		}
		if k.PTTL < 0 {
			r.NoTTL = append(r.NoTTL, k)
		}
	}
	return r
}

// Liveness is checker C4's second half: after the faults healed and a TTL
// passed, a fresh client asks for the lock and must get it within Bound.
type Liveness struct {
	OK    bool
	Took  time.Duration
	Bound time.Duration
	Err   error
}
