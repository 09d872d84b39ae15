package scripts

import (
	"fmt"
	"strconv"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// Release is one run of release.lua: free a lock Token holds, or undo a
// failed attempt (Rollback).
type Release struct {
	Key   string
	Token string
	Owner string // "" for a plain lock
	// Rollback: the lock was never held, so only a waiter at the head of
	// the key's queue is told that the key is free, and the token's
	// tombstone is left.
	Rollback bool
	// Tombstone leaves the token's tombstone for TTL also on a release: a
	// request with the token may still be on its way here.
	Tombstone bool
	TTL       time.Duration // how long a tombstone lasts
	// Sharded announces with SPUBLISH, as a Redis Cluster's subscribers hear
	// it, rather than PUBLISH.
	Sharded bool
	// Fence, when not 0, is raised first to the key's fencing counter where
	// the token holds the key, as Fence does; a new counter lives Keep.
	Fence int64
	Keep  time.Duration
	// Waiter, Ticket and Lease, on a roll-back of a waiter's attempt, put
	// the waiter back in the key's queue where the attempt took the key
	// (see release.lua).
	Waiter string
	Ticket int64
	Lease  time.Duration
}

// Call returns the run on a master.
func (r Release) Call(s *Set, n Names) driver.Call {
	k := n.OfToken(r.Key, r.Token)
	channel, tomb := k.Channel(), ""
	if r.Rollback || r.Tombstone {
		tomb = ms(r.TTL)
	}
	sharded := ""
	if r.Sharded {
		sharded = "1"
	}
	if r.Rollback {
		waiter, ticket, lease, waiterVoid := "", "", "", k.Void(r.Token)
		if r.Waiter != "" && r.Lease > 0 {
			waiter, ticket, lease, waiterVoid = r.Waiter, strconv.FormatInt(r.Ticket, 10), ms(r.Lease), k.Void(r.Waiter)
		}
		kv := []string{ // the keys, then the arguments: one allocation
			k.Lock(), k.Void(r.Token), k.Queue(), k.Leases(), k.Fence(), k.Floor(), waiterVoid,
			r.Token, r.Owner, channel, tomb, sharded, "", "", waiter, ticket, lease, "1",
		}
		return driver.Call{Script: s.Release, Keys: kv[:7:7], Args: kv[7:]}
	}
	if r.Fence != 0 {
		kv := []string{ // the keys, then the arguments: one allocation
			k.Lock(), k.Void(r.Token), k.Queue(), k.Leases(), k.Fence(), k.Floor(), k.Void(r.Token),
			r.Token, r.Owner, channel, tomb, sharded, strconv.FormatInt(r.Fence, 10), ms(r.Keep),
		}
		return driver.Call{Script: s.Release, Keys: kv[:7:7], Args: kv[7:]}
	}
	kv := []string{k.Lock(), k.Void(r.Token), k.Queue(), k.Leases(), k.Fence(), k.Floor(), k.Void(r.Token), r.Token, r.Owner, channel, tomb, sharded}
	return driver.Call{Script: s.Release, Keys: kv[:7:7], Args: kv[7:]}
}

// Released is a master's answer to a Release.
type Released int8

// The answers of release.lua.
const (
	NotHeld          Released = 0 // the token held nothing here
	Freed            Released = 1 // the key was deleted and the release announced
	StillHeld        Released = 2 // a reentrant lock keeps other holds
	FreedUnannounced Released = 3 // the key was deleted; the announcement failed
)

// DecodeReleased reads release.lua's reply.
func DecodeReleased(v any) (Released, error) {
	n, err := integer(v)
	if err != nil || n < 0 || n > 3 {
		return NotHeld, fmt.Errorf("release: unexpected reply %v", v)
	}
	return Released(n), nil
}
