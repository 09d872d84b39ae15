package scripts

import (
	"fmt"
	"strconv"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// Fence is one run of fence.lua: raise the fencing counter of a lock Token
// holds to Fence, so that every later quorum counts past it.
type Fence struct {
	Key   string
	Token string
	Owner string // "" for a plain lock
	Fence int64
	Keep  time.Duration // how long a new fencing counter lives
}

// Call returns the run on a master.
func (f Fence) Call(s *Set, n Names) driver.Call {
	k := n.Of(f.Key)
	return driver.Call{
		Script: s.Fence,
		Keys:   []string{k.Lock(), k.Fence(), k.Floor()},
		Args:   []string{f.Token, f.Owner, strconv.FormatInt(f.Fence, 10), ms(f.Keep)},
	}
}

// DecodeRaised reads fence.lua's reply: whether the counter was raised (the
// token held the key there).
func DecodeRaised(v any) (bool, error) {
	n, err := integer(v)
	if err != nil || n < 0 || n > 1 {
		return false, fmt.Errorf("fence: unexpected reply %v", v)
	}
	return n == 1, nil
}
