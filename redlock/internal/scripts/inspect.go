package scripts

import (
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// Inspect is one run of inspect.lua: read a key's state, changing nothing.
type Inspect struct{ Key string }

// Call returns the run on a master.
func (i Inspect) Call(s *Set, n Names) driver.Call {
	k := n.Of(i.Key)
	return driver.Call{
		Script: s.Inspect,
		Keys:   []string{k.Lock(), k.Fence(), k.Floor()},
	}
}

// State is one master's view of a key.
type State struct {
	// Holder is a plain lock's token, "owner:<owner>" for a reentrant one,
	// "" when the key is free, or Unknown followed by the key's type for a
	// key this library did not write.
	Holder string
	Holds  int           // a reentrant lock's holds; 1 for a plain lock
	PTTL   time.Duration // remaining TTL, or NoExpiry, or NoKey
	// Counter is a reentrant lock's fence record, or the master's floor (a
	// plain lock keeps no record), or 0 when the master has neither.
	Counter int64
}

// DecodeState reads inspect.lua's reply: {holder, holds, PTTL, counter}.
func DecodeState(v any) (State, error) {
	xs, err := array(v, 4)
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
	if err1 != nil || err2 != nil || err3 != nil {
		return State{}, fmt.Errorf("inspect: unexpected reply %v", v)
	}
	s.Holds, s.PTTL, s.Counter = int(holds), time.Duration(pttl)*time.Millisecond, counter
	return s, nil
}
