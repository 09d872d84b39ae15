package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo"
)

// SemFloor is a single-master semaphore in the style of Redisson's
// RPermitExpirableSemaphore: the floor a quorum semaphore is measured
// against. One master holds a sorted set of permits scored by their expiry
// on the master's clock; an acquire drops the expired ones and adds a permit
// while fewer than the limit remain; a release removes the permit and
// announces itself, and waiters retry on the announcement (or after
// semFloorPoll, should it go unheard). It has no fencing, no quorum and no
// queue: waiters race for each freed permit.
type SemFloor struct {
	m       *redigo.Redis
	permits int
	ttl     time.Duration
	timeout time.Duration
	acquire *driver.Script
	release *driver.Script

	sub  driver.Subscription
	done chan struct{} // closed when the subscriber exits

	mu    sync.Mutex
	freed chan struct{} // closed and replaced on every announcement
}

// semFloorPoll bounds a waiter's sleep when no announcement comes.
const semFloorPoll = 50 * time.Millisecond

const semFloorAcquire = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1`

const semFloorRelease = `
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('PUBLISH', KEYS[2], '')
return 1`

// NewSemFloor returns a semaphore floor of permits on the master at addr,
// each permit held for ttl; timeout bounds each command.
func NewSemFloor(ctx context.Context, addr string, permits int, timeout, ttl time.Duration) (*SemFloor, error) {
	if permits <= 0 || timeout <= 0 || ttl <= 0 {
		return nil, fmt.Errorf("bench: semaphore floor: permits %d, timeout %v and ttl %v must be positive", permits, timeout, ttl)
	}
	m, err := redigo.New(addr)
	if err != nil {
		return nil, err
	}
	sub, err := m.Subscribe(ctx)
	if err != nil {
		m.Close()
		return nil, err
	}
	s := &SemFloor{
		m: m, permits: permits, ttl: ttl, timeout: timeout, sub: sub, done: make(chan struct{}),
		acquire: driver.NewScript("semfloor-acquire", semFloorAcquire),
		release: driver.NewScript("semfloor-release", semFloorRelease),
		freed:   make(chan struct{}),
	}
	go s.listen()
	return s, nil
}

func semFloorChannel(key string) string { return "semfloor:" + key }

// listen wakes every waiter on each announcement, until the subscription closes.
func (s *SemFloor) listen() {
	defer close(s.done)
	for {
		if _, err := s.sub.Receive(); err != nil {
			return
		}
		s.mu.Lock()
		close(s.freed)
		s.freed = make(chan struct{})
		s.mu.Unlock()
	}
}

// Watch subscribes to key's announcements; call it before waiting on key.
func (s *SemFloor) Watch(key string) error { return s.sub.Subscribe(semFloorChannel(key)) }

// TryLock makes one attempt to take a permit of key.
func (s *SemFloor) TryLock(ctx context.Context, key string) (Held, error) {
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	v, err := s.eval(ctx, s.acquire, key, token, strconv.FormatInt(s.ttl.Milliseconds(), 10), strconv.Itoa(s.permits))
	if err != nil {
		// The acquire may have landed (a cancelled ctx, a late reply): take
		// the permit back, so that it is not held for the TTL.
		_, _ = s.eval(context.WithoutCancel(ctx), s.release, key, token) // best effort: the error above is what counts
		return nil, err
	}
	if v != int64(1) {
		return nil, errSemFull
	}
	return &semPermit{s: s, key: key, token: token}, nil
}

var errSemFull = errors.New("bench: every permit is held")

// Lock takes a permit of key, waiting for a release when none is free.
// A permit an attempt may have taken before it failed is removed again.
func (s *SemFloor) Lock(ctx context.Context, key string) (Held, error) {
	for {
		s.mu.Lock()
		freed := s.freed
		s.mu.Unlock()
		h, err := s.TryLock(ctx, key)
		// A command that timed out while ctx goes on is tried again, as a
		// refusal is: under 64 waiters, a busy master's reply may be late.
		retry := errors.Is(err, errSemFull) || (errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil)
		if !retry {
			return h, err
		}
		t := time.NewTimer(semFloorPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-freed:
		case <-t.C:
		}
		t.Stop()
	}
}

// eval runs sc on key (and its channel, which the acquire does not touch)
// within the command timeout.
func (s *SemFloor) eval(ctx context.Context, sc *driver.Script, key string, args ...string) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	rep, err := driver.Eval(ctx, s.m, driver.Call{Script: sc, Keys: []string{key, semFloorChannel(key)}, Args: args})
	return rep.Value, err
}

// Close closes the subscription and the master's connections.
func (s *SemFloor) Close() error {
	err := s.sub.Close()
	<-s.done
	return errors.Join(err, s.m.Close())
}

type semPermit struct {
	s          *SemFloor
	key, token string
}

func (p *semPermit) Release(ctx context.Context) error {
	_, err := p.s.eval(ctx, p.s.release, p.key, p.token)
	return err
}
