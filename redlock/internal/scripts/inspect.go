package scripts

import (
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// Inspect is one run of inspect.lua: read a key's state, changing nothing.
type Inspect struct {
	Key string
	// Token, when not "", is looked for: State.Held says whether it holds
	// the key (a hold of Owner, for a reentrant lock).
	Token, Owner string
}

// Call returns the run on a master.
func (i Inspect) Call(s *Set, n Names) driver.Call {
	k := n.Of(i.Key)
	c := driver.Call{
		Script: s.Inspect,
		Keys:   []string{k.Lock(), k.Fence(), k.Floor()},
	}
	if i.Token != "" {
		c.Args = []string{i.Token, i.Owner}
	}
	return c
}

// State is one master's view of a key.
type State struct {
	// Holder is a plain lock's token, "owner:<owner>" for a reentrant one,
	// "" when the key is free, or Unknown followed by the key's type for a
	// key this library did not write.
	Holder string
	Holds  int           // a reentrant lock's holds; 1 for a plain lock
	PTTL   time.Duration // remaining TTL, or NoExpiry, or NoKey
	// Counter is the holder's fence record (a plain lock's names its token),
	// or else the master's floor, or 0 when the master has neither.
	Counter int64
	// Held is true when Inspect's Token holds the key (a hold of its
	// Owner, for a reentrant lock).
	Held bool
}

// DecodeState reads inspect.lua's reply: {holder, holds, PTTL, counter, held}.
func DecodeState(v any) (State, error) {
	xs, err := array(v, 5)
	if err != nil {
		return State{}, fmt.Errorf("inspect: %w", err)
	}
	var s State
	var ok bool
	if s.Holder, ok = str(xs[0]); !ok {
		return State{}, fmt.Errorf("inspect: unexpected holder %v", xs[0])
	}
	holds, err1 := integer(xs[1])
	pttl, err2 := integer(xs[2])
	counter, err3 := integer(xs[3])
	held, err4 := integer(xs[4])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return State{}, fmt.Errorf("inspect: unexpected reply %v", v)
	}
	s.Holds, s.PTTL, s.Counter, s.Held = int(holds), time.Duration(pttl)*time.Millisecond, counter, held == 1
	return s, nil
}
