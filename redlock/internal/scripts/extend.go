package scripts

import (
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// Extend is one run of extend.lua: set the TTL of a lock Token holds.
type Extend struct {
	Key   string
	Token string
	TTL   time.Duration
	Owner string // "" for a plain lock
}

// Call returns the run on a master.
func (e Extend) Call(s *Set, n Names) driver.Call {
	return driver.Call{
		Script: s.Extend,
		Keys:   []string{n.Lock(e.Key), n.Fence(e.Key)},
		Args:   []string{e.Token, ms(e.TTL), e.Owner},
	}
}

// Extended is a master's answer to an Extend.
type Extended int8

// The answers of extend.lua.
const (
	Lapsed  Extended = 0 // another holds the key here
	Renewed Extended = 1 // the token held the key throughout, and its TTL was set
	Vacant  Extended = 2 // the key is free here: the master lost it or it expired
)

// DecodeExtended reads extend.lua's reply.
func DecodeExtended(v any) (Extended, error) {
	n, err := integer(v)
	if err != nil || n < 0 || n > 2 {
		return Lapsed, fmt.Errorf("extend: unexpected reply %v", v)
	}
	return Extended(n), nil
}
