package redlocktest

import (
	"fmt"
	"sync"

	"github.com/alicebob/miniredis/v2"

	"github.com/quorumlock/quorumlock/redlock"
)

// Servers is a set of in-process masters on free loopback ports, started by
// Start. It needs no testing.TB, so that examples and programs can use it;
// Masters builds on it for tests. Its methods are safe for concurrent use.
//
// What the masters model of a real master, and what they do not, is in the
// package documentation.
type Servers struct {
	mu      sync.Mutex
	masters []*miniredis.Miniredis
	up      []bool
	addrs   []string
}

// Start starts n in-process masters on free loopback ports. n must be at
// least 1, or the error matches redlock.ErrInvalid. If a master cannot be
// started, those already started are stopped and the error says why. The
// caller stops them with Close.
//
// A client over them must trust them unread (redlock.WithTrustUnreadable),
// and is best given a node timeout of DefaultNodeTimeout: see Masters.
func Start(n int) (*Servers, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: %d in-process masters; at least 1 is needed", redlock.ErrInvalid, n)
	}
	s := &Servers{}
	for range n {
		m := miniredis.NewMiniRedis()
		// Without ClockTTL miniredis expires keys only when told to
		// FastForward; a lock's TTL must run on its own.
		m.ClockTTL(true)
		if err := m.Start(); err != nil {
			s.Close()
			return nil, fmt.Errorf("redlocktest: starting an in-process master: %w", err)
		}
		s.masters = append(s.masters, m)
		s.up = append(s.up, true)
		s.addrs = append(s.addrs, m.Addr())
	}
	return s, nil
}

// Addrs returns the masters' addresses, "127.0.0.1:port", in the order
// Kill and Restart number them from 0.
func (s *Servers) Addrs() []string {
	return append([]string(nil), s.addrs...)
}

// Up returns how many masters are running.
func (s *Servers) Up() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, u := range s.up {
		if u {
			n++
		}
	}
	return n
}

// Kill stops master i: its listener and every connection to it are closed,
// and its clients see connections refused until Restart. Killing a master
// that is down does nothing. An i outside the set gets an error matching
// redlock.ErrInvalid.
func (s *Servers) Kill(i int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(i); err != nil {
		return err
	}
	if s.up[i] {
		s.masters[i].Close()
		s.up[i] = false
	}
	return nil
}

// Restart brings master i back on its port with the keys it had when it was
// killed, and the TTLs they had left less the time it was down. Restarting a
// master that is up does nothing. It fails if another process took the port
// meanwhile. An i outside the set gets an error matching redlock.ErrInvalid.
func (s *Servers) Restart(i int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(i); err != nil {
		return err
	}
	if s.up[i] {
		return nil
	}
	if err := s.masters[i].Restart(); err != nil {
		return fmt.Errorf("redlocktest: restarting master %d on %s: %w", i, s.addrs[i], err)
	}
	s.up[i] = true
	return nil
}

// Close stops every master that is up. Calling it again does nothing more.
func (s *Servers) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range s.masters {
		if s.up[i] {
			m.Close()
			s.up[i] = false
		}
	}
}

// check returns an error for a master number outside the set; under mu.
func (s *Servers) check(i int) error {
	if i < 0 || i >= len(s.masters) {
		return fmt.Errorf("%w: master %d of a group of %d (numbered from 0)", redlock.ErrInvalid, i, len(s.masters))
	}
	return nil
}
