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
type Names struct{ NS string }

// Lock is where the lock itself is kept.
func (n Names) Lock(key string) string { return n.NS + key }

// tag is the hash tag, braces included, that puts a name in key's slot.
func (n Names) tag(key string) string {
	t, _ := slot.TagFor(slot.Of(n.NS + key)) // Of's result is always a slot
	return "{" + t + "}"
}

// Fence is the key's fencing counter.
func (n Names) Fence(key string) string {
	return n.NS + ReservedPrefix + "fence:" + n.tag(key) + key
}

// Floor is the fence floor of key's slot on a master: at least every fence
// counted there for any key of the slot. A floor per slot rather than per
// master covers everything it must, since a key's counter lives only in the
// key's slot and every count and raise of it raises that slot's floor, and it
// moves with the slot when a cluster reshards.
func (n Names) Floor(key string) string {
	return n.NS + ReservedPrefix + "fence-floor:" + n.tag(key)
}

// Void is the tombstone a roll-back or a release leaves for a token of key.
func (n Names) Void(key, token string) string {
	return n.NS + ReservedPrefix + "void:" + n.tag(key) + token
}

// Stamp names the server process and replication history that counted the
// fences of key's slot on a master (see lib.lua's fenceEpoch). It is written
// without replication, so it never reaches a replica or the AOF.
func (n Names) Stamp(key string) string { return n.Floor(key) + ":stamp" }

// Channel is where releases of the key are announced.
func (n Names) Channel(key string) string {
	return n.channelPrefix() + n.tag(key) + key
}

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
