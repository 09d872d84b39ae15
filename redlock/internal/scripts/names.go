package scripts

import (
	"strings"

	"github.com/quorumlock/quorumlock/internal/slot"
)

// ReservedPrefix starts the names of the keys and channels the lock keeps
// besides the lock key itself; lock keys that start with it are refused.
const ReservedPrefix = "quorumlock:"

// Names maps a lock key to every key and channel the scripts touch on a
// master, all below the client's namespace NS, so that one ACL pattern can
// grant them: ~<namespace>* and &<namespace>*.
//
// Every name of a key is in the lock key's hash slot, so that a script's
// keys and its announcement share one slot on a Redis Cluster: each carries
// the hash tag {T}, T a short tag whose slot is the lock key's (slot.TagFor).
// The lock key itself is the user's key as given, with its own {tag} if it
// has one, and decides the slot. NS holds no braces (the client refuses
// them), so the first {…} of every other name is {T}.
type Names struct {
	NS string
	// PerSlot keeps a fence floor and its stamp per hash slot, as a Redis
	// Cluster node needs (see Floor); otherwise the master has one of each.
	PerSlot bool
}

// Lock is where the lock itself is kept.
func (n Names) Lock(key string) string { return n.NS + key }

// Of returns the names of key, made together: one string holds them all,
// so that a script's call costs one allocation for its names (two with a
// namespace), besides a tombstone's (Void: see OfToken).
func (n Names) Of(key string) KeyNames { return n.OfToken(key, "") }

// OfToken is Of with the tombstone of token made in the same string.
func (n Names) OfToken(key, token string) KeyNames {
	const (
		fence    = ReservedPrefix + "fence:"
		floor    = ReservedPrefix + "fence-floor"
		stamp    = ":stamp"
		released = ReservedPrefix + "released:"
		queue    = ReservedPrefix + "queue:"
		leases   = ReservedPrefix + "queue-leases:"
		void     = ReservedPrefix + "void:"
		braced   = tagLen + 2 // "{" + tag + "}"
	)
	ns := n.NS
	k := KeyNames{n: n, lock: n.Lock(key), token: token}
	var b strings.Builder
	b.Grow(6*len(ns) + 4*len(key) + len(fence) + len(floor) + 1 + len(stamp) + len(released) + len(queue) + len(leases) + len(void) + 6*braced + len(token))
	s := slot.Of(k.lock)
	tagged := func(prefix string) { // ns, prefix, the hash tag
		b.WriteString(ns)
		b.WriteString(prefix)
		b.WriteByte('{')
		var t [tagLen]byte
		b.Write(slot.AppendTag(t[:0], s))
		b.WriteByte('}')
	}
	tagged(fence)
	k.tag = b.Len() - braced
	b.WriteString(key)
	k.fence = b.Len()
	if n.PerSlot {
		tagged(floor + ":")
	} else {
		b.WriteString(ns)
		b.WriteString(floor)
	}
	k.floor = b.Len()
	b.WriteString(stamp)
	k.stamp = b.Len()
	tagged(released)
	b.WriteString(key)
	k.channel = b.Len()
	tagged(queue)
	b.WriteString(key)
	k.queue = b.Len()
	tagged(leases)
	b.WriteString(key)
	k.leases = b.Len()
	if token != "" {
		tagged(void)
		b.WriteString(token)
	}
	k.all = b.String()
	return k
}

// tagLen is the length of a hash tag without its braces (slot.TagFor).
const tagLen = 5

// KeyNames are the names of one key (see Names), for a script that takes
// several of them. all holds them one after the other: the fence counter
// up to fence, the floor up to floor, its stamp's suffix up to stamp (the
// stamp is the floor's name and the suffix), the channel up to channel,
// the waiting queue up to queue, its leases up to leases, then token's
// tombstone when there is a token.
type KeyNames struct {
	n                                                Names
	lock, all, token                                 string
	tag, fence, floor, stamp, channel, queue, leases int // offsets in all; tag: of the braced hash tag
}

// Lock is where the lock itself is kept.
func (k KeyNames) Lock() string { return k.lock }

// Fence is the key's fencing counter.
func (k KeyNames) Fence() string { return k.all[:k.fence] }

// Floor is the fence floor the key counts from: see Names.Floor.
func (k KeyNames) Floor() string { return k.all[k.fence:k.floor] }

// Void is the tombstone a roll-back or a release leaves for a token.
func (k KeyNames) Void(token string) string {
	if token == k.token && token != "" {
		return k.all[k.leases:]
	}
	return k.n.NS + ReservedPrefix + "void:" + k.all[k.tag:k.tag+tagLen+2] + token
}

// Permits is a semaphore's permit record: the number of permits its
// callers agreed on (see permits.lua).
func (k KeyNames) Permits() string {
	return k.n.NS + ReservedPrefix + "permits:" + k.all[k.tag:k.tag+tagLen+2] + k.lock[len(k.n.NS):]
}

// Stamp names who counted the fences of the key's floor: see Names.Stamp.
func (k KeyNames) Stamp() string { return k.all[k.fence:k.stamp] }

// Channel is where releases of the key are announced.
func (k KeyNames) Channel() string { return k.all[k.stamp:k.channel] }

// Queue is the key's waiting queue: a sorted set of the waiters' ids,
// scored by their tickets (see acquire.lua).
func (k KeyNames) Queue() string { return k.all[k.channel:k.queue] }

// Leases holds when each waiter's place in Queue ends, on the master's
// clock: a sorted set of the waiters' ids, scored in milliseconds.
func (k KeyNames) Leases() string { return k.all[k.queue:k.leases] }

// Fence is the key's fencing counter.
func (n Names) Fence(key string) string { return n.Of(key).Fence() }

// Floor is the fence floor of key on a master: at least every fence counted
// there for any key it covers. On a plain master it is one key for the whole
// master, outside every key's slot, as no cluster asks for one. With
// PerSlot it is one per hash slot, in key's slot: that covers everything it
// must, since a key's counter lives only in the key's slot and every count
// and raise of it raises that slot's floor, and it moves with the slot when
// a cluster reshards. One per master starts its clock seed once, where one
// per slot starts one for each slot at its first count: masters seed apart
// (their clocks are read at different moments), so right after a seed the
// masters' counts disagree and the fence needs raising.
func (n Names) Floor(key string) string { return n.Of(key).Floor() }

// Void is the tombstone a roll-back or a release leaves for a token of key.
func (n Names) Void(key, token string) string { return n.Of(key).Void(token) }

// Stamp names the server process and replication history that counted the
// fences of key's floor on a master (see lib.lua's fenceEpoch). It is written
// without replication, so it never reaches a replica or the AOF.
func (n Names) Stamp(key string) string { return n.Of(key).Stamp() }

// Channel is where releases of the key are announced.
func (n Names) Channel(key string) string { return n.Of(key).Channel() }

func (n Names) channelPrefix() string { return n.NS + ReservedPrefix + "released:" }

// KeyOf returns the lock key whose releases channel announces, and whether
// channel is such a channel at all.
func (n Names) KeyOf(channel string) (string, bool) {
	rest, ok := strings.CutPrefix(channel, n.channelPrefix())
	if !ok || len(rest) < 2 || rest[0] != '{' {
		return "", false
	}
	end := strings.IndexByte(rest, '}')
	if end < 0 {
		return "", false
	}
	key := rest[end+1:]
	return key, channel == n.Channel(key)
}
