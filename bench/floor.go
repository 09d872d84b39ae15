package bench

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/driver/redigo"
)

// Floor is the least a correct Redlock acquire+release can do, written
// straight on redigo: the lower bound the library is measured against.
//
// Acquire sends SET key token NX PX ttl to every master at once and returns
// as soon as a quorum said OK, or as soon as a quorum is out of reach. The
// lock counts only if the validity left after the drift reserve is positive.
// Release sends an owner-checked compare-and-delete (EVALSHA, EVAL on
// NOSCRIPT) to every master at once and returns at a quorum of answers.
//
// It cuts no corner that matters for correctness: each master's call is
// bounded by the node timeout (pool wait, write and read), a failed attempt
// deletes its token everywhere it may have landed, and a master's delete is
// sent only once its SET has returned, so a late SET is never left behind.
// What it leaves out are the library's features: fencing, reentrancy,
// release announcements, the restart guard, and error detail.
type Floor struct {
	masters []floorMaster
	quorum  int
	timeout time.Duration
	ttl     time.Duration
	bg      sync.WaitGroup // stragglers: late SETs and their deletes

	// acquire and release run on one master; see NewFloor and
	// NewScriptedFloor.
	acquire func(ctx context.Context, i int, key, token string) (ok, refused bool, err error)
	release func(ctx context.Context, i int, key, token string, rollback bool) error
}

var _ Locker = (*Floor)(nil)

// deleteScript deletes the key only if it still holds the caller's token.
const deleteScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`

// NewFloor returns a floor over pools (one per master; Close closes them),
// with a per-master timeout and the lock TTL.
func NewFloor(pools []*redis.Pool, timeout, ttl time.Duration) (*Floor, error) {
	ms := make([]floorMaster, len(pools))
	for i, p := range pools {
		if p == nil {
			return nil, fmt.Errorf("floor: pool %d is nil", i)
		}
		ms[i] = redigoMaster{p}
	}
	return newFloorOn(ms, timeout, ttl)
}

// NewPipelinedFloor is NewFloor over the library's pipelined connections
// (redigo.Redis), one per master: the same client code,
// with the commands of concurrent operations sharing one connection per
// master. Close closes them.
func NewPipelinedFloor(masters []*redigo.Redis, timeout, ttl time.Duration) (*Floor, error) {
	ms := make([]floorMaster, len(masters))
	for i, m := range masters {
		if m == nil {
			return nil, fmt.Errorf("floor: master %d is nil", i)
		}
		ms[i] = pipelinedMaster{m}
	}
	return newFloorOn(ms, timeout, ttl)
}

func newFloorOn(ms []floorMaster, timeout, ttl time.Duration) (*Floor, error) {
	switch {
	case len(ms) == 0:
		return nil, errors.New("floor: no masters")
	case timeout <= 0:
		return nil, fmt.Errorf("floor: node timeout %v is not positive", timeout)
	case ttl <= Drift(ttl):
		return nil, fmt.Errorf("floor: ttl %v leaves no validity", ttl)
	}
	f := &Floor{masters: ms, quorum: len(ms)/2 + 1, timeout: timeout, ttl: ttl}
	del := newScript(deleteScript, 1)
	ttlMS := strconv.FormatInt(f.ttl.Milliseconds(), 10)
	f.acquire = func(ctx context.Context, i int, key, token string) (bool, bool, error) {
		r, err := f.masters[i].do(ctx, "SET", key, token, "NX", "PX", ttlMS)
		return r == "OK", err == nil && r == nil, err
	}
	f.release = func(ctx context.Context, i int, key, token string, _ bool) error {
		_, err := f.eval(ctx, i, del, key, token)
		return err
	}
	return f, nil
}

// floorMaster runs one command on one master within ctx's deadline: waiting
// for a connection, writing and reading all count.
type floorMaster interface {
	do(ctx context.Context, cmd string, args ...string) (any, error)
	Close() error
}

// redigoMaster is a master behind a redigo pool, a connection per command.
type redigoMaster struct{ p *redis.Pool }

func (m redigoMaster) do(ctx context.Context, cmd string, args ...string) (any, error) {
	conn, err := m.p.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	d := time.Until(dl)
	if d <= 0 {
		return nil, context.DeadlineExceeded
	}
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	return redis.DoWithTimeout(conn, d, cmd, a...)
}

func (m redigoMaster) Close() error { return m.p.Close() }

// pipelinedMaster is a master behind one pipelined connection.
type pipelinedMaster struct{ r *redigo.Redis }

func (m pipelinedMaster) do(ctx context.Context, cmd string, args ...string) (any, error) {
	return m.r.Do(ctx, cmd, args...)
}

func (m pipelinedMaster) Close() error { return m.r.Close() }

// script is a Lua script sent by SHA1, and by source when the master does
// not have it cached.
type script struct {
	src, sha string
	keys     int
}

func newScript(src string, keys int) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:]), keys: keys}
}

// NewScriptedFloor is the floor's client code running quorumlock's own Lua
// scripts instead of SET NX PX and the bare compare-and-delete: the acquire
// script with its fencing counter and tombstone check, and the release
// script with its announcement (or, rolling back, its tombstone).
// acquireSrc and releaseSrc are the scripts as the library sends them (its
// lib.lua, a newline, then the script). The keys and arguments follow the
// scripts' headers:
//
//	acquire  KEYS lock, fence record, fence floor, tombstone, fence stamp,
//	         waiting queue, its leases
//	         ARGV token, TTL ms, '' (no proposed count), the master's
//	         identity: a plain acquire that does not wait
//	release  KEYS lock, fence record, waiting queue, its leases, and
//	         (rolling back) the tombstone
//	         ARGV token, channel, and (rolling back) '' (no owner),
//	         tombstone TTL ms
//
// The identity ("<run_id> <master_replid>") is read once per master here,
// as the library reads it once per connection; with it the script checks
// its fence stamp with one GET, as the library's does.
//
// It splits the gap between the floor and the library in two: what the
// floor and this one differ by is work on the masters; what this one and
// the library differ by is work in the client.
func NewScriptedFloor(pools []*redis.Pool, timeout, ttl time.Duration, acquireSrc, releaseSrc string) (*Floor, error) {
	f, err := NewFloor(pools, timeout, ttl)
	if err != nil {
		return nil, err
	}
	return f, f.useScripts(acquireSrc, releaseSrc)
}

// NewPipelinedScriptedFloor is NewScriptedFloor over pipelined connections
// (see NewPipelinedFloor).
func NewPipelinedScriptedFloor(masters []*redigo.Redis, timeout, ttl time.Duration, acquireSrc, releaseSrc string) (*Floor, error) {
	f, err := NewPipelinedFloor(masters, timeout, ttl)
	if err != nil {
		return nil, err
	}
	return f, f.useScripts(acquireSrc, releaseSrc)
}

// useScripts makes the floor run the library's scripts: see
// NewScriptedFloor.
func (f *Floor) useScripts(acquireSrc, releaseSrc string) error {
	if acquireSrc == "" || releaseSrc == "" {
		return errors.New("floor: empty script")
	}
	acq, rel, undo := newScript(acquireSrc, 7), newScript(releaseSrc, 4), newScript(releaseSrc, 5)
	ids := make([]string, len(f.masters))
	for i, m := range f.masters {
		ids[i] = identity(m)
	}
	ttlMS := strconv.FormatInt(f.ttl.Milliseconds(), 10)
	const prefix = "quorumlock:" // the library's reserved key prefix
	f.acquire = func(ctx context.Context, i int, key, token string) (bool, bool, error) {
		r, err := redis.Values(f.eval(ctx, i, acq,
			key, prefix+"fence:"+key, prefix+"fence-floor", prefix+"void:"+token, prefix+"fence-floor:stamp",
			prefix+"queue:"+key, prefix+"queue-leases:"+key,
			token, ttlMS, "", ids[i]))
		if err != nil {
			return false, false, err
		}
		// {1, fence} or {0, holder's PTTL, holder}
		if len(r) < 2 {
			return false, false, fmt.Errorf("floor: acquire script replied %v", r)
		}
		granted, err := redis.Int64(r[0], nil)
		if err != nil {
			return false, false, fmt.Errorf("floor: acquire script replied %v", r)
		}
		return granted == 1, granted == 0, nil
	}
	f.release = func(ctx context.Context, i int, key, token string, rollback bool) error {
		lock, record, queue, leases, channel := key, prefix+"fence:"+key, prefix+"queue:"+key, prefix+"queue-leases:"+key, prefix+"released:"+key
		if rollback {
			_, err := redis.Int64(f.eval(ctx, i, undo, lock, record, queue, leases, prefix+"void:"+token, token, channel, "", ttlMS))
			return err
		}
		_, err := redis.Int64(f.eval(ctx, i, rel, lock, record, queue, leases, token, channel))
		return err
	}
	return nil
}

// identity reads a master's run_id and master_replid, as the library's
// acquire script takes them; "" if they cannot be read, and the script then
// reads them itself.
func identity(m floorMaster) string {
	var id []string
	for _, f := range []struct{ section, field string }{{"server", "run_id:"}, {"replication", "master_replid:"}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s, err := redis.String(m.do(ctx, "INFO", f.section))
		cancel()
		if err != nil {
			return ""
		}
		for _, line := range strings.Split(s, "\r\n") {
			if v, ok := strings.CutPrefix(line, f.field); ok {
				id = append(id, v)
			}
		}
	}
	if len(id) != 2 {
		return ""
	}
	return id[0] + " " + id[1]
}

// NewFloorFromAddrs returns a floor over fresh pools (NewRedigoPool).
func NewFloorFromAddrs(addrs []string, timeout, ttl time.Duration) (*Floor, error) {
	pools := make([]*redis.Pool, len(addrs))
	for i, a := range addrs {
		pools[i] = NewRedigoPool(a)
	}
	f, err := NewFloor(pools, timeout, ttl)
	if err != nil {
		for _, p := range pools {
			p.Close()
		}
	}
	return f, err
}

// ErrFloorNotObtained is the floor's refusal.
var ErrFloorNotObtained = errors.New("floor: lock not obtained")

// floorLock is a lock the floor holds.
type floorLock struct {
	f          *Floor
	key, token string
	landed     []chan struct{} // closed once the master's SET has returned
	refused    []bool          // the master said no; readable once landed is closed
}

// vote is one master's answer.
type vote struct {
	ok  bool
	err error
}

// TryLock makes one attempt.
func (f *Floor) TryLock(ctx context.Context, key string) (Held, error) {
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	n := len(f.masters)
	refused := make([]bool, n)
	start := time.Now()
	opCtx, votes, landed := f.fanOut(ctx, nil, func(ctx context.Context, i int) (bool, error) {
		ok, no, err := f.acquire(ctx, i, key, token)
		refused[i] = no
		return ok, err
	})
	yes, _ := collect(opCtx, votes, n, f.quorum)
	validity := f.ttl - time.Since(start) - Drift(f.ttl)
	l := &floorLock{f: f, key: key, token: token, landed: landed, refused: refused}
	if yes >= f.quorum && validity > 0 {
		return l, nil
	}
	l.rollback()
	return nil, fmt.Errorf("%w: %d of %d masters said OK", ErrFloorNotObtained, yes, n)
}

// rollback deletes the token on every master that did not refuse it, each
// once its SET returned (so a late OK is undone too), in the background;
// Close waits for it.
func (l *floorLock) rollback() {
	for i := range l.f.masters {
		l.f.bg.Add(1)
		go func() {
			defer l.f.bg.Done()
			<-l.landed[i]
			if l.refused[i] {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), l.f.timeout)
			defer cancel()
			l.f.release(ctx, i, l.key, l.token, true)
		}()
	}
}

// Release deletes the token on every master at once and returns at a quorum
// of answers. A master whose SET has not returned yet gets its delete after.
func (l *floorLock) Release(ctx context.Context) error {
	f := l.f
	n := len(f.masters)
	opCtx, votes, _ := f.fanOut(ctx, l.landed, func(ctx context.Context, i int) (bool, error) {
		err := f.release(ctx, i, l.key, l.token, false)
		return err == nil, err
	})
	ok, errs := collect(opCtx, votes, n, f.quorum)
	if ok >= f.quorum {
		return nil
	}
	return fmt.Errorf("floor: release reached %d of %d masters: %w", ok, n, errors.Join(errs...))
}

// collect counts votes until need of the n masters said yes, or need can no
// longer be reached, or ctx's deadline passed. Votes already in when the
// deadline passed, or when the last master's op ended it, still count.
func collect(ctx context.Context, votes <-chan vote, n, need int) (yes int, errs []error) {
	take := func(v vote) {
		if v.ok {
			yes++
		} else if v.err != nil {
			errs = append(errs, v.err)
		}
	}
	for answered := 0; answered < n && yes < need && yes+n-answered >= need; answered++ {
		select {
		case v := <-votes:
			take(v)
		case <-ctx.Done():
			for ; answered < n && yes < need; answered++ {
				select {
				case v := <-votes:
					take(v)
				default:
					return yes, append(errs, ctx.Err())
				}
			}
			return yes, errs
		}
	}
	return yes, errs
}

// fanOut runs op on every master at once under one deadline, the node
// timeout from now. If after is set, master i waits for after[i] first,
// within the same deadline. It returns the deadline's ctx, the votes (a
// buffered channel, so stragglers never block) and, per master, a channel
// closed when its op has returned. The deadline is released by the last op.
func (f *Floor) fanOut(ctx context.Context, after []chan struct{}, op func(ctx context.Context, i int) (bool, error)) (context.Context, <-chan vote, []chan struct{}) {
	n := len(f.masters)
	opCtx, cancel := withDeadline(ctx, f.timeout)
	votes := make(chan vote, n)
	done := make([]chan struct{}, n)
	var running atomic.Int32
	running.Store(int32(n))
	for i := range n {
		done[i] = make(chan struct{})
		f.bg.Add(1)
		go func() {
			defer f.bg.Done()
			var v vote
			if after != nil {
				select {
				case <-after[i]:
				case <-opCtx.Done():
					v.err = opCtx.Err()
				}
			}
			if v.err == nil {
				v.ok, v.err = op(opCtx, i)
			}
			votes <- v
			close(done[i])
			if running.Add(-1) == 0 {
				cancel()
			}
		}()
	}
	return opCtx, votes, done
}

// eval runs a script on master i: EVALSHA, then EVAL on NOSCRIPT. keys
// come first in keysAndArgs; their count is the script's.
func (f *Floor) eval(ctx context.Context, i int, s script, keysAndArgs ...string) (any, error) {
	args := make([]string, 0, 2+len(keysAndArgs))
	args = append(args, s.sha, strconv.Itoa(s.keys))
	args = append(args, keysAndArgs...)
	r, err := f.masters[i].do(ctx, "EVALSHA", args...)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		args[0] = s.src
		r, err = f.masters[i].do(ctx, "EVAL", args...)
	}
	return r, err
}

// Close waits for the stragglers, then closes the connections.
func (f *Floor) Close() error {
	f.bg.Wait()
	var errs []error
	for _, m := range f.masters {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}

// withDeadline is context.WithTimeout for a deadline shared by several
// goroutines, the last of which cancels it.
func withDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
