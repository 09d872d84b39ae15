package redlock

import (
	"time"

	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// fakeSem is a semaphore's key on a fake master: each permit's token and
// when it ends, and the number of permits its record names.
type fakeSem struct {
	permits int
	ends    map[string]time.Time
}

// liveSem returns key's semaphore with its ended permits dropped, or nil
// when no permit is held. f.mu must be held.
func (f *fakeNode) liveSem(key string) *fakeSem {
	s := f.sems[key]
	if s == nil {
		return nil
	}
	now := f.clk.Now()
	for t, e := range s.ends {
		if !now.Before(e) {
			delete(s.ends, t)
		}
	}
	if len(s.ends) == 0 {
		delete(f.sems, key)
		return nil
	}
	return s
}

// last is when the semaphore's last permit ends: when its key expires.
func (s *fakeSem) last() time.Time {
	var l time.Time
	for _, e := range s.ends {
		if e.After(l) {
			l = e
		}
	}
	return l
}

// applyPermit is permit.lua. f.mu must be held.
func (f *fakeNode) applyPermit(r request) scripts.Grant {
	now := f.clk.Now()
	if k := f.live(r.key); k != nil {
		return scripts.Grant{PTTL: k.until.Sub(now), Holder: scripts.Unknown, Rank: -1}
	}
	s := f.liveSem(r.key)
	if s != nil && s.permits != r.permits {
		return scripts.Grant{PTTL: scripts.PermitsDiffer, Holder: scripts.Unknown, Rank: -1, Permits: int64(s.permits)}
	}
	if f.voided[r.token] {
		if s != nil {
			delete(s.ends, r.token)
		}
		return scripts.Grant{PTTL: scripts.RolledBack}
	}
	if s != nil {
		if _, ok := s.ends[r.token]; ok {
			return scripts.Grant{OK: true, Counter: f.floor}
		}
		if len(s.ends) >= r.permits {
			first, at := "", time.Time{}
			for t, e := range s.ends {
				if first == "" || e.Before(at) || (e.Equal(at) && t < first) {
					first, at = t, e
				}
			}
			return scripts.Grant{PTTL: at.Sub(now), Holder: first, Rank: -1}
		}
	} else {
		s = &fakeSem{permits: r.permits, ends: map[string]time.Time{}}
		if f.sems == nil {
			f.sems = map[string]*fakeSem{}
		}
		f.sems[r.key] = s
	}
	s.ends[r.token] = now.Add(r.ttl)
	return scripts.Grant{OK: true, Counter: f.count(r)}
}

// extendPermit is permitextend.lua. f.mu must be held.
func (f *fakeNode) extendPermit(r request) scripts.Extended {
	if f.live(r.key) != nil {
		return scripts.Lapsed
	}
	s := f.liveSem(r.key)
	switch {
	case s == nil:
		return scripts.Vacant
	case !s.ends[r.token].IsZero():
		if until := f.clk.Now().Add(r.ttl); until.After(s.ends[r.token]) {
			s.ends[r.token] = until
		}
		return scripts.Renewed
	case len(s.ends) < r.permits:
		return scripts.Vacant
	}
	return scripts.Lapsed
}

// releasePermit is permitrelease.lua, after the tombstone. f.mu must be
// held.
func (f *fakeNode) releasePermit(r request) scripts.Released {
	s := f.liveSem(r.key)
	if s == nil || s.ends[r.token].IsZero() {
		return scripts.NotHeld
	}
	if r.fence != 0 {
		f.raise(r, r.fence)
	}
	delete(s.ends, r.token)
	f.liveSem(r.key)
	return scripts.Freed
}

// holdsPermit reports whether token holds a permit of key. f.mu must be
// held.
func (f *fakeNode) holdsPermit(key, token string) bool {
	s := f.liveSem(key)
	return s != nil && !s.ends[token].IsZero()
}

// semHolds reports a live semaphore's key, as a lock's scripts see it: a
// key of another kind, held until its last permit ends. f.mu must be held.
func (f *fakeNode) semHolds(key string) (time.Duration, bool) {
	s := f.liveSem(key)
	if s == nil {
		return 0, false
	}
	return s.last().Sub(f.clk.Now()), true
}
