package redlock

import (
	"time"

	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// A key's readers on a fake master are a fakeSem whose record names 0
// permits, as read.lua keeps them: the permit scripts' fakes extend,
// release and fence them.

// applyRead is read.lua. f.mu must be held. The fake keeps no waiting
// queue, so no writer waits here.
func (f *fakeNode) applyRead(r request) scripts.Grant {
	now := f.clk.Now()
	if k := f.live(r.key); k != nil {
		holder := k.token
		if k.owner != "" {
			holder = scripts.Unknown
		}
		return scripts.Grant{PTTL: k.until.Sub(now), Holder: holder, Rank: -1}
	}
	s := f.liveSem(r.key)
	if s != nil && s.permits != 0 {
		return scripts.Grant{PTTL: s.last().Sub(now), Holder: scripts.Unknown, Rank: -1}
	}
	if f.voided[r.token] {
		if s != nil {
			delete(s.ends, r.token)
		}
		return scripts.Grant{PTTL: scripts.RolledBack}
	}
	if s == nil {
		s = &fakeSem{ends: map[string]time.Time{}}
		if f.sems == nil {
			f.sems = map[string]*fakeSem{}
		}
		f.sems[r.key] = s
	} else if _, ok := s.ends[r.token]; ok {
		return scripts.Grant{OK: true, Counter: f.floor}
	}
	s.ends[r.token] = now.Add(r.ttl)
	return scripts.Grant{OK: true, Counter: f.count(r)}
}
