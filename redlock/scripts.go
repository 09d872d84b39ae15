package redlock

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// reservedPrefix starts the names of the keys and channels this library
// keeps besides the lock key itself; lock keys that start with it are
// refused.
const reservedPrefix = "quorumlock:"

// names maps a lock key to every key and channel the scripts touch on a
// master, all below the client's namespace (WithNamespace), so that one ACL
// pattern can grant them: ~<namespace>* and &<namespace>*.
type names struct{ ns string }

// lock is where the lock itself is kept.
func (n names) lock(key string) string { return n.ns + key }

// fence is the key's fencing counter.
func (n names) fence(key string) string { return n.ns + reservedPrefix + "fence:" + key }

// floor is the master's fence floor, shared by every key.
func (n names) floor() string { return n.ns + reservedPrefix + "fence-floor" }

// void is the tombstone a roll-back or a release leaves for a token.
func (n names) void(token string) string { return n.ns + reservedPrefix + "void:" + token }

// stamp names the server process and replication history that counted the
// master's fences (see lib.lua's fenceEpoch). It is written without
// replication, so it never reaches a replica or the AOF.
func (n names) stamp() string { return n.floor() + ":stamp" }

// channel is where releases of the key are announced.
func (n names) channel(key string) string { return n.ns + reservedPrefix + "released:" + key }

// script is one Lua script, sent by hash and by source when the master does
// not have it cached.
type script struct {
	name string
	keys int
	src  string
	sha  string
	// identity: the script takes the master's identity, as the guard knows
	// it, as its last argument (see redisNode.evalOnce).
	identity bool
}

// argv returns the EVALSHA arguments: hash, key count, keys and arguments.
func (s *script) argv(keysAndArgs ...any) []any {
	return append([]any{s.sha, s.keys}, keysAndArgs...)
}

type scriptSet struct {
	acquire, extend, release, fence, inspect *script
}

func loadScripts() scriptSet {
	lib := mustRead("lib.lua")
	mk := func(name string, keys int) *script {
		src := lib + "\n" + mustRead(name+".lua")
		sum := sha1.Sum([]byte(src))
		return &script{name: name, keys: keys, src: src, sha: hex.EncodeToString(sum[:])}
	}
	acquire := mk("acquire", 5)
	acquire.identity = true
	return scriptSet{
		acquire: acquire,
		extend:  mk("extend", 1),
		release: mk("release", 2),
		fence:   mk("fence", 3),
		inspect: mk("inspect", 3),
	}
}

// mustRead reads an embedded script. The files are compiled into the binary,
// so a failure is a build defect, not a run-time condition.
func mustRead(name string) string {
	b, err := scriptFS.ReadFile("scripts/" + name)
	if err != nil {
		panic("redlock: embedded script missing: " + name)
	}
	return string(b)
}
