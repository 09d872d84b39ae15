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

// Call returns the run on a master. It sends the keys and arguments its
// run uses and leaves out the rest (see release.lua): a plain release sends
// four keys and two arguments.
func (r Release) Call(s *Set, n Names) driver.Call {
	k := n.OfToken(r.Key, r.Token)
	kv := [18]string{ // the keys, then the arguments, as release.lua numbers them
		k.Lock(), k.Fence(), k.Queue(), k.Leases(), "", "", "",
		r.Token, k.Channel(), r.Owner,
	}
	keys, args := 4, 3
	if r.Rollback || r.Tombstone {
		kv[4], kv[10] = k.Void(r.Token), s.ms(r.TTL)
		keys, args = 5, 4
	}
	if r.Sharded {
		kv[11] = "1"
		args = 5
	}
	if r.Fence != 0 {
		kv[5], kv[12], kv[13] = k.Floor(), strconv.FormatInt(r.Fence, 10), s.ms(r.Keep)
		keys, args = 6, 7
	}
	if r.Rollback {
		if r.Waiter != "" && r.Lease > 0 {
			kv[6], kv[14], kv[15], kv[16] = k.Void(r.Waiter), r.Waiter, strconv.FormatInt(r.Ticket, 10), s.ms(r.Lease)
		}
		kv[17] = "1"
		keys, args = 7, 11
	}
	for i := 4; i < keys; i++ {
		if kv[i] == "" {
			kv[i] = k.Void(r.Token) // a key the run does not use, in the lock's slot as every key a call sends must be
		}
	}
	for args > 2 && kv[7+args-1] == "" {
		args-- // a trailing '' is what the script reads for an argument left out
	}
	all := kv[:]
	return driver.Call{Script: s.Release, Keys: all[:keys:keys], Args: all[7 : 7+args : 7+args]}
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
