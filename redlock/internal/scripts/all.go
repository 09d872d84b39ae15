package scripts

import (
	"strconv"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// AcquireAll is one run of acquireall.lua: take every key of Keys for
// Token, or none. It answers as Acquire does (Grant): one counter for the
// set. On a Redis Cluster node every key must be in one hash slot.
type AcquireAll struct {
	Keys    []string
	Token   string
	TTL     time.Duration
	Propose int64 // as Acquire's
}

// Call returns the run on a master.
func (a AcquireAll) Call(s *Set, n Names) driver.Call {
	first := n.OfToken(a.Keys[0], a.Token)
	keys := setKeys(n, a.Keys, first.Void(a.Token), first.Floor(), first.Stamp())
	return driver.Call{Script: s.AcquireAll, Keys: keys, Args: []string{a.Token, s.ms(a.TTL), proposal(a.Propose)}}
}

// setKeys lists the locks of keys, then shared, then each lock's waiting
// queue, then each one's leases: the keys of acquireall.lua and
// releaseall.lua.
func setKeys(n Names, keys []string, shared ...string) []string {
	out := make([]string, 0, 3*len(keys)+len(shared))
	for _, k := range keys {
		out = append(out, n.Lock(k))
	}
	out = append(out, shared...)
	for _, k := range keys {
		out = append(out, n.Of(k).Queue())
	}
	for _, k := range keys {
		out = append(out, n.Of(k).Leases())
	}
	return out
}

// ExtendAll is one run of extendall.lua: set the TTL of every key of Keys,
// where Token holds them all. It answers as Extend does.
type ExtendAll struct {
	Keys  []string
	Token string
	TTL   time.Duration
}

// Call returns the run on a master.
func (e ExtendAll) Call(s *Set, n Names) driver.Call {
	keys := make([]string, len(e.Keys))
	for i, k := range e.Keys {
		keys[i] = n.Lock(k)
	}
	return driver.Call{Script: s.ExtendAll, Keys: keys, Args: []string{e.Token, s.ms(e.TTL)}}
}

// ReleaseAll is one run of releaseall.lua: free every key of Keys that
// Token holds, or undo a failed attempt (Rollback). Its fields are
// Release's but Owner, Keep and the waiter's, which a set has not. It
// answers as Release does.
type ReleaseAll struct {
	Keys                []string
	Token               string
	Rollback, Tombstone bool
	TTL                 time.Duration // how long a tombstone lasts
	Sharded             bool
	Fence               int64
}

// Call returns the run on a master.
func (r ReleaseAll) Call(s *Set, n Names) driver.Call {
	first := n.OfToken(r.Keys[0], r.Token)
	args := make([]string, 5, 5+len(r.Keys)) // token, tombstone, sharded, fence, roll-back: "" for none
	args[0] = r.Token
	if r.Rollback || r.Tombstone {
		args[1] = ms(r.TTL)
	}
	if r.Sharded {
		args[2] = "1"
	}
	if r.Fence != 0 {
		args[3] = strconv.FormatInt(r.Fence, 10)
	}
	if r.Rollback {
		args[4] = "1"
	}
	for _, k := range r.Keys {
		args = append(args, n.Of(k).Channel())
	}
	return driver.Call{Script: s.ReleaseAll, Keys: setKeys(n, r.Keys, first.Void(r.Token), first.Floor()), Args: args}
}

// FenceAll is one run of fenceall.lua: raise the node's fence floor to
// Fence where Token holds every key of Keys. It answers as Fence does.
type FenceAll struct {
	Keys  []string
	Token string
	Fence int64
}

// Call returns the run on a master.
func (f FenceAll) Call(s *Set, n Names) driver.Call {
	keys := make([]string, 0, len(f.Keys)+1)
	for _, k := range f.Keys {
		keys = append(keys, n.Lock(k))
	}
	keys = append(keys, n.Of(f.Keys[0]).Floor())
	return driver.Call{Script: s.FenceAll, Keys: keys, Args: []string{f.Token, strconv.FormatInt(f.Fence, 10)}}
}
