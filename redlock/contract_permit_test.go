package redlock

import (
	"time"

	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// permitContract is the script contract of a semaphore's permits (see
// contract), run with the lock's sequences on the fake and on real masters.
var permitContract = []struct {
	name  string
	steps []step
}{
	{"permits: K are granted; the next is refused and told the permit that ends first", []step{
		{op: "acquire", token: "a", permits: 2, ok: true, counter: "new"},
		{op: "acquire", token: "b", permits: 2, ok: true, counter: "new"},
		{op: "acquire", token: "c", permits: 2, holder: "a", pttl: "live"},
		{op: "release", token: "a", permits: 2, released: scripts.Freed},
		{op: "acquire", token: "c", permits: 2, ok: true, counter: "new"},
		{op: "acquire", token: "d", permits: 2, holder: "b", pttl: "live"},
	}},
	{"permits: a retried acquire that already landed is granted with the node's count", []step{
		{op: "acquire", token: "a", permits: 3, ok: true, counter: "new", label: "a"},
		{op: "acquire", token: "a", permits: 3, ok: true, counter: "=a"},
	}},
	{"permits: extend renews the holder's; vacant while a permit is free, lapsed when none is", []step{
		{op: "acquire", token: "a", permits: 1, ok: true, counter: "new"},
		{op: "extend", token: "a", permits: 1, extended: scripts.Renewed},
		{op: "extend", token: "b", permits: 1, extended: scripts.Lapsed},
		{op: "release", token: "a", permits: 1, released: scripts.Freed},
		{op: "extend", token: "a", permits: 1, extended: scripts.Vacant},
		{op: "acquire", token: "c", permits: 2, ok: true, counter: "new"},
		{op: "extend", token: "a", permits: 2, extended: scripts.Vacant},
	}},
	{"permits: an extension never shortens a permit", []step{
		{op: "acquire", token: "a", permits: 1, ok: true, counter: "new"},
		{op: "extend", token: "a", permits: 1, ttl: time.Second, extended: scripts.Renewed},
		{op: "acquire", token: "b", permits: 1, holder: "a", pttl: "long"},
	}},
	{"permits: only the holder gives a permit back, once", []step{
		{op: "acquire", token: "a", permits: 2, ok: true, counter: "new"},
		{op: "release", token: "b", permits: 2, released: scripts.NotHeld},
		{op: "release", token: "a", permits: 2, released: scripts.Freed},
		{op: "release", token: "a", permits: 2, released: scripts.NotHeld},
	}},
	{"permits: a roll-back frees the permit and turns away the token's late acquire", []step{
		{op: "acquire", token: "a", permits: 1, ok: true, counter: "new"},
		{op: "release", token: "a", permits: 1, rollback: true, released: scripts.Freed},
		{op: "acquire", token: "a", permits: 1, pttl: "rolled back"},
		{op: "acquire", token: "b", permits: 1, ok: true, counter: "new"},
	}},
	{"permits: a roll-back where the token never landed leaves its tombstone", []step{
		{op: "release", token: "a", permits: 2, rollback: true, released: scripts.NotHeld},
		{op: "acquire", token: "a", permits: 2, pttl: "rolled back"},
	}},
	{"permits: a call with another K is refused, and told the K recorded", []step{
		{op: "acquire", token: "a", permits: 2, ok: true, counter: "new"},
		{op: "acquire", token: "b", permits: 3, holder: scripts.Unknown, pttl: "permits differ", recorded: 2},
		{op: "acquire", token: "b", permits: 2, ok: true, counter: "new"},
	}},
	{"permits: a lock and a semaphore on one key refuse each other as a key of another kind", []step{
		{op: "acquire", token: "a", ok: true, counter: "new"},
		{op: "acquire", token: "b", permits: 2, holder: scripts.Unknown, pttl: "live"},
		{op: "extend", token: "a", permits: 2, extended: scripts.Lapsed},
		{op: "release", token: "a", released: scripts.Freed},
		{op: "acquire", token: "c", permits: 2, ok: true, counter: "new"},
		{op: "acquire", token: "d", holder: scripts.Unknown, pttl: "live"},
		{op: "extend", token: "c", extended: scripts.Lapsed},
		{op: "release", token: "c", released: scripts.NotHeld},
		{op: "release", token: "c", permits: 2, released: scripts.Freed},
	}},
	{"permits: a fence raise by the holder carries into the next grant's counter", []step{
		{op: "acquire", token: "a", permits: 2, ok: true, counter: "new", label: "a"},
		{op: "fence", token: "b", permits: 2, fence: "a+1000", ok: false},
		{op: "fence", token: "a", permits: 2, fence: "a+1000", ok: true},
		{op: "acquire", token: "b", permits: 2, ok: true, counter: ">=a+1001"},
	}},
	{"permits: a release by the holder raises the fence first", []step{
		{op: "acquire", token: "a", permits: 2, ok: true, counter: "new", label: "a"},
		{op: "release", token: "a", permits: 2, fence: "a+1000", released: scripts.Freed},
		{op: "acquire", token: "b", permits: 2, ok: true, counter: ">=a+1001"},
	}},
	{"permits: a proposal above the count, and not above the master's clock, is the count", []step{
		{op: "acquire", token: "a", permits: 2, ok: true, counter: "new", label: "a"},
		{op: "wait"},
		{op: "acquire", token: "b", permits: 2, propose: "a+1000", ok: true, counter: "=a+1000"},
	}},
}
