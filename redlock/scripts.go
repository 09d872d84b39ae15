package redlock

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// Key names this library writes besides the lock key itself. Keys that start
// with reservedPrefix are refused as lock keys.
const (
	reservedPrefix = "quorumlock:"
	fenceFloorKey  = reservedPrefix + "fence-floor"
	// fenceStampKey names the server process and replication history that
	// counted the master's fences (see lib.lua's fenceEpoch). It is written
	// without replication, so it never reaches a replica or the AOF.
	fenceStampKey = fenceFloorKey + ":stamp"
)

func fenceKey(key string) string       { return reservedPrefix + "fence:" + key }
func releaseChannel(key string) string { return reservedPrefix + "released:" + key }

// voidKey is the tombstone a roll-back leaves for an attempt's token.
func voidKey(token string) string { return reservedPrefix + "void:" + token }

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
