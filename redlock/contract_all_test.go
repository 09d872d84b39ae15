package redlock

import (
	"time"

	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// allContract is the script contract of a set of keys taken together (the
// set's scripts: acquireall.lua and the others), run with the lock's
// sequences on the fake and on real masters. A step's keys names the set.
var allContract = []struct {
	name  string
	steps []step
}{
	{"a set: every key is granted, or none is", []step{
		{op: "acquire", keys: "a,b", token: "x", ok: true, counter: "new", label: "x"},
		{op: "inspect", key: "a", holder: "x", holds: 1, pttl: "live"},
		{op: "inspect", key: "b", holder: "x", holds: 1, pttl: "live"},
		{op: "acquire", keys: "c,b", token: "y", holder: "x", pttl: "live"},
		{op: "inspect", key: "c", holder: "", pttl: "no key"},
	}},
	{"a set: a retried acquire that already landed is granted with the node's count", []step{
		{op: "acquire", keys: "a,b", token: "x", ok: true, counter: "new", label: "x"},
		{op: "acquire", keys: "a,b", token: "x", ok: true, counter: "=x"},
	}},
	{"a set: the refusal names the first key held, in the set's order", []step{
		{op: "acquire", key: "b", token: "p", ok: true, counter: "new"},
		{op: "acquire", key: "c", token: "q", owner: "o", ok: true, counter: "new"},
		{op: "acquire", keys: "a,b,c", token: "x", holder: "p", pttl: "live"},
		{op: "acquire", keys: "a,c,b", token: "x", holder: "owner:o", pttl: "live"},
		{op: "inspect", key: "a", holder: "", pttl: "no key"},
	}},
	{"a set and a lock refuse each other on a shared key", []step{
		{op: "acquire", keys: "a,b", token: "x", ok: true, counter: "new"},
		{op: "acquire", key: "b", token: "p", holder: "x", pttl: "live"},
		{op: "extend", key: "b", token: "p", extended: scripts.Lapsed},
		{op: "release", key: "b", token: "p", released: scripts.NotHeld},
		{op: "release", keys: "a,b", token: "x", released: scripts.Freed},
		{op: "acquire", key: "b", token: "p", ok: true, counter: "new"},
		{op: "acquire", keys: "a,b", token: "y", holder: "p", pttl: "live"},
	}},
	{"a set: extend renews every key; lapsed for another token; vacant once a key is free", []step{
		{op: "acquire", keys: "a,b", token: "x", ok: true, counter: "new"},
		{op: "extend", keys: "a,b", token: "x", extended: scripts.Renewed},
		{op: "extend", keys: "a,b", token: "y", extended: scripts.Lapsed},
		{op: "release", key: "b", token: "x", released: scripts.Freed},
		{op: "extend", keys: "a,b", token: "x", extended: scripts.Vacant},
		{op: "acquire", keys: "a,b", token: "x", ok: true, counter: "new"},
		{op: "extend", keys: "a,b", token: "x", extended: scripts.Renewed},
	}},
	{"a set: an extension never shortens a key's TTL", []step{
		{op: "acquire", keys: "a,b", token: "x", ok: true, counter: "new"},
		{op: "extend", keys: "a,b", token: "x", ttl: time.Second, extended: scripts.Renewed},
		{op: "acquire", key: "b", token: "y", holder: "x", pttl: "long"},
	}},
	{"a set: an extension with one key another's is lapsed", []step{
		{op: "acquire", keys: "a,b", token: "x", ok: true, counter: "new"},
		{op: "release", key: "b", token: "x", released: scripts.Freed},
		{op: "acquire", key: "b", token: "p", ok: true, counter: "new"},
		{op: "extend", keys: "a,b", token: "x", extended: scripts.Lapsed},
	}},
	{"a set: only the holder frees the keys, once", []step{
		{op: "acquire", keys: "a,b", token: "x", ok: true, counter: "new"},
		{op: "release", keys: "a,b", token: "y", released: scripts.NotHeld},
		{op: "release", keys: "a,b", token: "x", released: scripts.Freed},
		{op: "release", keys: "a,b", token: "x", released: scripts.NotHeld},
		{op: "inspect", key: "a", holder: "", pttl: "no key"},
		{op: "inspect", key: "b", holder: "", pttl: "no key"},
	}},
	{"a set: a roll-back frees every key and turns away the token's late acquire", []step{
		{op: "acquire", keys: "a,b", token: "x", ok: true, counter: "new"},
		{op: "release", keys: "a,b", token: "x", rollback: true, released: scripts.Freed},
		{op: "acquire", keys: "a,b", token: "x", pttl: "rolled back"},
		{op: "inspect", key: "b", holder: "", pttl: "no key"},
		{op: "acquire", keys: "b,a", token: "y", ok: true, counter: "new"},
	}},
	{"a set: a roll-back where the token never landed still leaves its tombstone", []step{
		{op: "release", keys: "a,b", token: "x", rollback: true, released: scripts.NotHeld},
		{op: "acquire", keys: "a,b", token: "x", pttl: "rolled back"},
		{op: "inspect", key: "a", holder: "", pttl: "no key"},
	}},
	{"a set: a fence raise needs every key, and carries into the next holder's counter", []step{
		{op: "acquire", keys: "a,b", token: "x", ok: true, counter: "new", label: "x"},
		{op: "fence", keys: "a,b", token: "y", fence: "x+1000", ok: false},
		{op: "fence", keys: "a,b", token: "x", fence: "x+1000", ok: true},
		{op: "release", keys: "a,b", token: "x", released: scripts.Freed},
		{op: "acquire", key: "b", token: "p", ok: true, counter: ">=x+1001"},
		{op: "release", key: "b", token: "p", released: scripts.Freed},
		{op: "acquire", keys: "a,b", token: "z", ok: true, counter: "new", label: "z"},
		{op: "release", key: "b", token: "z", released: scripts.Freed},
		{op: "fence", keys: "a,b", token: "z", fence: "z+1000", ok: false},
	}},
	{"a set: a release by the holder raises the fence first", []step{
		{op: "acquire", keys: "a,b", token: "x", ok: true, counter: "new", label: "x"},
		{op: "release", keys: "a,b", token: "x", fence: "x+1000", released: scripts.Freed},
		{op: "acquire", keys: "c,a", token: "y", ok: true, counter: ">=x+1001"},
	}},
	{"a set: a proposal above the count, and not above the master's clock, is the count", []step{
		{op: "acquire", key: "q", token: "p", ok: true, counter: "new", label: "p"},
		{op: "wait"},
		{op: "acquire", keys: "a,b", token: "x", propose: "p+1000", ok: true, counter: "=p+1000"},
	}},
	{"counters grow across locks and sets", []step{
		{op: "acquire", key: "a", token: "p", ok: true, counter: "new"},
		{op: "release", key: "a", token: "p", released: scripts.Freed},
		{op: "acquire", keys: "b,a", token: "x", ok: true, counter: "new"},
		{op: "release", keys: "b,a", token: "x", released: scripts.Freed},
		{op: "acquire", key: "b", token: "q", ok: true, counter: "new"},
	}},
}
