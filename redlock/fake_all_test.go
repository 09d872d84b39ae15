package redlock

import "github.com/quorumlock/quorumlock/redlock/internal/scripts"

// The fake master's side of a set of keys (LockAll): the set's scripts,
// acquireall.lua and the others, on the fake's keys. The fake keeps no
// waiting queue, so a set is never barred by one here.

// applyAll is acquireall.lua. f.mu must be held.
func (f *fakeNode) applyAll(r request) scripts.Grant {
	now := f.clk.Now()
	mine := 0
	for _, key := range r.set.keys {
		if pttl, ok := f.semHolds(key); ok {
			return scripts.Grant{PTTL: pttl, Holder: scripts.Unknown, Rank: -1}
		}
		switch k := f.live(key); {
		case k == nil:
		case k.owner == "" && k.token == r.token:
			mine++
		case k.owner != "":
			return scripts.Grant{PTTL: k.until.Sub(now), Holder: "owner:" + k.owner, Rank: -1}
		default:
			return scripts.Grant{PTTL: k.until.Sub(now), Holder: k.token, Rank: -1}
		}
	}
	if f.voided[r.token] && mine < len(r.set.keys) {
		return scripts.Grant{PTTL: scripts.RolledBack}
	}
	if mine == len(r.set.keys) {
		return scripts.Grant{OK: true, Counter: f.floor}
	}
	c := f.count(r)
	for _, key := range r.set.keys {
		f.keys[key] = &fakeKey{token: r.token, until: now.Add(r.ttl)}
	}
	return scripts.Grant{OK: true, Counter: c}
}

// extendAll is extendall.lua. f.mu must be held.
func (f *fakeNode) extendAll(r request) scripts.Extended {
	free := false
	for _, key := range r.set.keys {
		if _, ok := f.semHolds(key); ok {
			return scripts.Lapsed
		}
		switch k := f.live(key); {
		case k == nil:
			free = true
		case !k.heldBy(r):
			return scripts.Lapsed
		}
	}
	if free {
		return scripts.Vacant
	}
	for _, key := range r.set.keys {
		if until := f.clk.Now().Add(r.ttl); until.After(f.keys[key].until) {
			f.keys[key].until = until
		}
	}
	return scripts.Renewed
}

// heldAll lists the keys of r's set that r's token holds. f.mu must be held.
func (f *fakeNode) heldAll(r request) []string {
	var held []string
	for _, key := range r.set.keys {
		if k := f.live(key); k != nil && k.heldBy(r) {
			held = append(held, key)
		}
	}
	return held
}

// releaseAll is releaseall.lua, after its tombstone. f.mu must be held.
func (f *fakeNode) releaseAll(r request) scripts.Released {
	held := f.heldAll(r)
	if len(held) == 0 {
		return scripts.NotHeld
	}
	if r.fence != 0 {
		f.raise(r, r.fence)
	}
	for _, key := range held {
		delete(f.keys, key)
	}
	return scripts.Freed
}

// raiseAll is fenceall.lua. f.mu must be held.
func (f *fakeNode) raiseAll(r request, fence int64) bool {
	if len(f.heldAll(r)) < len(r.set.keys) {
		return false
	}
	f.raise(r, fence)
	return true
}
