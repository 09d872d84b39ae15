package redlock

import (
	"time"

	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// rwContract is the script contract of an RWLock's holds (see contract): a
// read hold (read: true) and a writer, which is a plain lock, run with the
// lock's sequences on the fake and on real masters. The queue's part,
// which the fake does not keep, is TestRWLock_ScriptsQueue's.
var rwContract = []struct {
	name  string
	steps []step
}{
	{"rw: readers share; a writer is refused while one reads, and told of another kind", []step{
		{op: "acquire", token: "r1", read: true, ok: true, counter: "new"},
		{op: "acquire", token: "r2", read: true, ok: true, counter: "new"},
		{op: "acquire", token: "w", holder: scripts.Unknown, pttl: "live"},
		{op: "release", token: "r1", read: true, released: scripts.Freed},
		{op: "acquire", token: "w", holder: scripts.Unknown, pttl: "live"},
		{op: "release", token: "r2", read: true, released: scripts.Freed},
		{op: "acquire", token: "w", ok: true, counter: "new"},
	}},
	{"rw: a reader is refused while a writer holds, and told the writer", []step{
		{op: "acquire", token: "w", ok: true, counter: "new"},
		{op: "acquire", token: "r", read: true, holder: "w", pttl: "live"},
		{op: "release", token: "w", released: scripts.Freed},
		{op: "acquire", token: "r", read: true, ok: true, counter: "new"},
	}},
	{"rw: a retried read that already landed is granted with the node's count", []step{
		{op: "acquire", token: "r", read: true, ok: true, counter: "new", label: "r"},
		{op: "acquire", token: "r", read: true, ok: true, counter: "=r"},
	}},
	{"rw: extend renews a reader's; vacant when it holds none, lapsed while a writer holds", []step{
		{op: "acquire", token: "r", read: true, ok: true, counter: "new"},
		{op: "extend", token: "r", read: true, extended: scripts.Renewed},
		{op: "extend", token: "x", read: true, extended: scripts.Vacant},
		{op: "release", token: "r", read: true, released: scripts.Freed},
		{op: "extend", token: "r", read: true, extended: scripts.Vacant},
		{op: "acquire", token: "w", ok: true, counter: "new"},
		{op: "extend", token: "r", read: true, extended: scripts.Lapsed},
		{op: "extend", token: "w", extended: scripts.Renewed},
	}},
	{"rw: an extension never shortens a reader's hold", []step{
		{op: "acquire", token: "r", read: true, ok: true, counter: "new"},
		{op: "extend", token: "r", read: true, ttl: time.Second, extended: scripts.Renewed},
		{op: "acquire", token: "w", holder: scripts.Unknown, pttl: "long"},
	}},
	{"rw: only the reader gives its hold back, once", []step{
		{op: "acquire", token: "r", read: true, ok: true, counter: "new"},
		{op: "release", token: "x", read: true, released: scripts.NotHeld},
		{op: "release", token: "r", read: true, released: scripts.Freed},
		{op: "release", token: "r", read: true, released: scripts.NotHeld},
	}},
	{"rw: a roll-back frees the read hold and turns away the token's late acquire", []step{
		{op: "acquire", token: "r", read: true, ok: true, counter: "new"},
		{op: "release", token: "r", read: true, rollback: true, released: scripts.Freed},
		{op: "acquire", token: "r", read: true, pttl: "rolled back"},
		{op: "acquire", token: "w", ok: true, counter: "new"},
	}},
	{"rw: a writer counts above a reader whose fence was raised", []step{
		{op: "acquire", token: "r", read: true, ok: true, counter: "new", label: "r"},
		{op: "fence", token: "x", read: true, fence: "r+1000", ok: false},
		{op: "fence", token: "r", read: true, fence: "r+1000", ok: true},
		{op: "release", token: "r", read: true, released: scripts.Freed},
		{op: "acquire", token: "w", ok: true, counter: ">=r+1001"},
	}},
	{"rw: a reader's release raises the fence first", []step{
		{op: "acquire", token: "r", read: true, ok: true, counter: "new", label: "r"},
		{op: "release", token: "r", read: true, fence: "r+1000", released: scripts.Freed},
		{op: "acquire", token: "w", ok: true, counter: ">=r+1001"},
	}},
	{"rw: a reader counts above a writer whose fence was raised", []step{
		{op: "acquire", token: "w", ok: true, counter: "new", label: "w"},
		{op: "fence", token: "w", fence: "w+1000", ok: true},
		{op: "release", token: "w", released: scripts.Freed},
		{op: "acquire", token: "r", read: true, ok: true, counter: ">=w+1001"},
	}},
	{"rw: a proposal above the count, and not above the master's clock, is a reader's count", []step{
		{op: "acquire", token: "r", read: true, ok: true, counter: "new", label: "r"},
		{op: "wait"},
		{op: "acquire", token: "s", read: true, propose: "r+1000", ok: true, counter: "=r+1000"},
	}},
	{"rw: readers, a reentrant lock and a semaphore on one key refuse each other", []step{
		{op: "acquire", token: "o1", owner: "o", ok: true, counter: "new"},
		{op: "acquire", token: "r", read: true, holder: scripts.Unknown, pttl: "live"},
		{op: "release", token: "o1", owner: "o", released: scripts.Freed},
		{op: "acquire", token: "p", permits: 2, ok: true, counter: "new"},
		{op: "acquire", token: "r", read: true, holder: scripts.Unknown, pttl: "live"},
		{op: "release", token: "p", permits: 2, released: scripts.Freed},
		{op: "acquire", token: "r", read: true, ok: true, counter: "new"},
		{op: "acquire", token: "p", permits: 2, holder: scripts.Unknown, pttl: "permits differ"},
		{op: "acquire", token: "o2", owner: "o", holder: scripts.Unknown, pttl: "live"},
		{op: "release", token: "p", permits: 2, released: scripts.NotHeld},
		{op: "release", token: "r", read: true, released: scripts.Freed},
		{op: "acquire", token: "o2", owner: "o", ok: true, counter: "new"},
	}},
}
