package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// waitGone waits until no server holds key's lock.
func waitGone(t *testing.T, key string, srv ...*redistest.Server) {
	t.Helper()
	for _, s := range srv {
		require.Eventually(t, func() bool {
			n, err := redis.Int(do(t, s, "EXISTS", stored(key)), nil)
			return err == nil && n == 0
		}, 2*time.Second, time.Millisecond, "%s still holds %q", s.Addr(), key)
	}
}

// A lock taken by one client is resumed by another, which extends and
// releases it; the taker's handle then finds it gone.
func TestIntegration_Resume_ExtendsAndReleasesLikeTheTaker(t *testing.T) {
	srv := masters(t, 5)
	a, b := client(t, srv), client(t, srv)
	ctx := context.Background()
	l, err := a.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	waitHeld(t, "k", srv...)

	r, err := b.Resume(ctx, "k", l.Token(), 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "k", r.Key())
	assert.Equal(t, l.Token(), r.Token())
	assert.Equal(t, "", r.Owner())
	assert.Equal(t, 5*time.Second, r.TTL(), "the ttl given, for later extensions")
	assert.Equal(t, l.Fence(), r.Fence(), "no other grant moved the masters' floors")
	assert.GreaterOrEqual(t, len(r.Granted()), b.Quorum())
	assert.Greater(t, r.Validity(), 9*time.Second, "the keys' TTL left, not the ttl given")
	assert.LessOrEqual(t, r.Until(), l.Until().Add(50*time.Millisecond), "never past the taker's")
	assert.NoError(t, r.Err())

	require.NoError(t, r.Extend(ctx, 20*time.Second))
	assert.Greater(t, r.Validity(), 19*time.Second)
	require.NoError(t, r.Release(ctx))
	waitGone(t, "k", srv...)
	<-r.Done()
	assert.NoError(t, r.Err())
	assert.ErrorIs(t, l.Extend(ctx, time.Second), ErrLockLost, "one lock, released by the other handle")

	_, err = b.Resume(ctx, "k", l.Token(), 5*time.Second)
	require.ErrorIs(t, err, ErrLockNotHeld, "a released token")
	var ae *AttemptError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 5, ae.Count(MasterNotHeld))
	assert.Contains(t, err.Error(), "redlock: not resumed: 0 of 5 masters hold the token and count, 3 needed")
}

// Keys deleted under a resumed lock: Extend reports the loss, Done closes;
// with WithAutoExtend the watchdog finds it.
func TestIntegration_Resume_ReportsLoss(t *testing.T) {
	srv := masters(t, 3)
	a, b := client(t, srv), client(t, srv)
	ctx := context.Background()
	for _, auto := range []bool{false, true} {
		key := "loss-" + strconv.FormatBool(auto)
		l, err := a.TryLock(ctx, key, time.Second)
		require.NoError(t, err)
		var opts []LockOption
		if auto {
			opts = append(opts, WithAutoExtend())
		}
		// The watchdog extends a third of the ttl into the validity: here,
		// after about a third of a second.
		r, err := b.Resume(ctx, key, l.Token(), time.Second, opts...)
		require.NoError(t, err)
		deleteHeld(t, key, srv...)
		if !auto {
			require.ErrorIs(t, r.Extend(ctx, time.Second), ErrLockLost)
		}
		select {
		case <-r.Done():
		case <-time.After(3 * time.Second):
			t.Fatalf("auto %v: the loss went unseen", auto)
		}
		assert.ErrorIs(t, r.Err(), ErrLockLost, "auto %v", auto)
		assert.ErrorIs(t, r.Release(ctx), ErrLockLost)
	}
}

// The watchdog of a resumed lock keeps it past the keys' TTL left.
func TestIntegration_Resume_AutoExtendOutlivesTheTTL(t *testing.T) {
	srv := masters(t, 3)
	a, b := client(t, srv), client(t, srv)
	ctx := context.Background()
	l, err := a.TryLock(ctx, "k", 600*time.Millisecond)
	require.NoError(t, err)
	r, err := b.Resume(ctx, "k", l.Token(), 600*time.Millisecond, WithAutoExtend())
	require.NoError(t, err)
	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, r.Err())
	assert.Positive(t, r.Validity())
	require.NoError(t, r.Release(ctx))
	waitGone(t, "k", srv...)
}

// A token that expired, that never was, or that holds only a minority is
// not resumed.
func TestIntegration_Resume_NotHeld(t *testing.T) {
	srv := masters(t, 5)
	a, b := client(t, srv), client(t, srv)
	ctx := context.Background()

	short, err := a.TryLock(ctx, "expired", time.Second) // waitGone waits 2s
	require.NoError(t, err)
	waitGone(t, "expired", srv...)
	_, err = b.Resume(ctx, "expired", short.Token(), time.Second)
	assert.ErrorIs(t, err, ErrLockNotHeld, "expired")

	l, err := a.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	_, err = b.Resume(ctx, "k", "not-"+l.Token(), time.Second)
	assert.ErrorIs(t, err, ErrLockNotHeld, "another token")
	_, err = b.Resume(ctx, "k", l.Token(), time.Second, WithOwner("o"))
	assert.ErrorIs(t, err, ErrLockNotHeld, "a plain lock is no hold of an owner")

	deleteHeld(t, "k", srv[2:]...)
	_, err = b.Resume(ctx, "k", l.Token(), time.Second)
	require.ErrorIs(t, err, ErrLockNotHeld, "a minority")
	assert.NotErrorIs(t, err, ErrQuarantined)
	assert.Contains(t, err.Error(), "2 of 5 masters hold the token and count, 3 needed: 3 do not hold it")
}

// Masters the restart guard does not count (here: they may evict lock
// keys) hold the token but do not make the quorum.
func TestIntegration_Resume_GuardedMastersDoNotCount(t *testing.T) {
	srv := masters(t, 3)
	a := client(t, srv, WithTrustEviction())
	ctx := context.Background()
	l, err := a.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	waitHeld(t, "k", srv...)
	for _, s := range srv[1:] {
		do(t, s, "CONFIG", "SET", "maxmemory", "100mb")
		do(t, s, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	}

	_, err = client(t, srv).Resume(ctx, "k", l.Token(), time.Second)
	require.ErrorIs(t, err, ErrLockNotHeld)
	assert.ErrorIs(t, err, ErrQuarantined)
	assert.Contains(t, err.Error(), "1 of 3 masters hold the token and count, 2 needed")
	var ae *AttemptError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 2, ae.Count(MasterAbstained))

	r, err := client(t, srv, WithTrustEviction()).Resume(ctx, "k", l.Token(), time.Second)
	require.NoError(t, err, "trusted, the same masters count")
	require.NoError(t, r.Release(ctx))
}

// A hold of a reentrant lock is resumed with its owner; its release leaves
// the other holds.
func TestIntegration_Resume_ReentrantHold(t *testing.T) {
	srv := masters(t, 3)
	a, b := client(t, srv), client(t, srv)
	ctx := context.Background()
	h1, err := a.TryLock(ctx, "r", 10*time.Second, WithOwner("o"))
	require.NoError(t, err)
	h2, err := a.TryLock(ctx, "r", 10*time.Second, WithOwner("o"))
	require.NoError(t, err)

	_, err = b.Resume(ctx, "r", h1.Token(), time.Second)
	assert.ErrorIs(t, err, ErrLockNotHeld, "a hold needs its owner")
	_, err = b.Resume(ctx, "r", h1.Token(), time.Second, WithOwner("p"))
	assert.ErrorIs(t, err, ErrLockNotHeld, "another owner")
	r, err := b.Resume(ctx, "r", h1.Token(), time.Second, WithOwner("o"))
	require.NoError(t, err)
	assert.Equal(t, "o", r.Owner())
	assert.Equal(t, max(h1.Fence(), h2.Fence()), r.Fence(), "the lock's fence record: its holds' largest")
	require.NoError(t, r.Extend(ctx, 20*time.Second))
	require.NoError(t, r.Release(ctx))
	_, err = b.Resume(ctx, "r", h1.Token(), time.Second, WithOwner("o"))
	assert.ErrorIs(t, err, ErrLockNotHeld, "a released hold")
	require.NoError(t, h2.Extend(ctx, time.Second), "the other hold stays")
	require.NoError(t, h2.Release(ctx))
	waitGone(t, "r", srv...)
}

// The masters record a plain lock's fence beside its key: a resumed lock
// has the taker's fence, though grants of other keys moved their floors.
func TestIntegration_Resume_TheTakersFence(t *testing.T) {
	srv := masters(t, 3)
	a, b := client(t, srv), client(t, srv)
	ctx := context.Background()
	l, err := a.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	waitHeld(t, "k", srv...)
	for i := range 3 {
		o, err := a.TryLock(ctx, "other-"+strconv.Itoa(i), time.Second)
		require.NoError(t, err)
		require.NoError(t, o.Release(ctx))
	}
	r, err := b.Resume(ctx, "k", l.Token(), 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, l.Fence(), r.Fence())
	require.NoError(t, r.Release(ctx))
	next, err := a.TryLock(ctx, "k", time.Second)
	require.NoError(t, err)
	assert.Greater(t, next.Fence(), r.Fence())
	require.NoError(t, next.Release(ctx))
}

// A plain lock's fence record lives as long as the lock: an extension
// renews it, so a Resume past the TTL the lock was taken with still finds
// the taker's fence, though other grants raised every floor since. The
// record of a lock that is gone expires with it.
func TestIntegration_Resume_ExtendedLockKeepsItsFence(t *testing.T) {
	srv := masters(t, 3)
	a, b := client(t, srv), client(t, srv)
	ctx := context.Background()
	l, err := a.TryLock(ctx, "k", 300*time.Millisecond)
	require.NoError(t, err)
	waitHeld(t, "k", srv...)
	require.NoError(t, l.Extend(ctx, 10*time.Second))
	for i := range 3 {
		o, err := a.TryLock(ctx, "other-"+strconv.Itoa(i), time.Second)
		require.NoError(t, err)
		require.NoError(t, o.Release(ctx))
	}
	time.Sleep(400 * time.Millisecond) // past the TTL the lock was taken with
	r, err := b.Resume(ctx, "k", l.Token(), 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, l.Fence(), r.Fence(), "the record outlived the first TTL with the lock")
	require.NoError(t, r.Release(ctx))
	names := suiteNames().Of("k")
	for _, s := range srv {
		pttl, err := redis.Int64(do(t, s, "PTTL", names.Fence()), nil)
		require.NoError(t, err)
		assert.LessOrEqual(t, pttl, (10 * time.Second).Milliseconds(), "%s: the record lives no longer than the lock", s.Addr())
	}
}

// Where no quorum records one fence (here the records of two masters are
// gone), a resumed lock has the largest fence the masters report, and the
// lagging ones are raised to it: the next holder's is larger.
func TestIntegration_Resume_NoRecordedFence_RaisesTheLargest(t *testing.T) {
	srv := masters(t, 3)
	a, b := client(t, srv), client(t, srv)
	ctx := context.Background()
	l, err := a.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	waitHeld(t, "k", srv...)
	names := suiteNames().Of("k")
	// The third master keeps its record: the count it granted, which is
	// the lock's fence or, where it counted on its own (a fresh master
	// counts from its clock, read when its script ran) and answered after
	// the quorum, above it or below it. The others' floors go above both,
	// as floors only grow.
	rec, err := redis.String(do(t, srv[2], "GET", names.Fence()), nil)
	require.NoError(t, err)
	var kept int64
	_, err = fmt.Sscanf(rec, "%d", &kept)
	require.NoError(t, err)
	base := max(kept, l.Fence())
	top := base + 2000
	for i, s := range srv[:2] {
		do(t, s, "DEL", names.Fence())
		do(t, s, "SET", names.Floor(), base+1000*int64(i+1))
	}

	r, err := b.Resume(ctx, "k", l.Token(), 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, top, r.Fence(), "the largest the masters report")
	raised := 0
	for _, s := range srv {
		f, err := redis.Int64(do(t, s, "GET", names.Floor()), nil)
		require.NoError(t, err)
		if f >= top {
			raised++
		}
	}
	assert.GreaterOrEqual(t, raised, b.Quorum(), "a quorum counts at or above the fence")
	require.NoError(t, r.Release(ctx))
	next, err := a.TryLock(ctx, "k", time.Second)
	require.NoError(t, err)
	assert.Greater(t, next.Fence(), r.Fence())
	require.NoError(t, next.Release(ctx))
}

// Resume on Redis 6.0: a plain lock and a reentrant hold.
func TestIntegration_Redis60_Resume(t *testing.T) {
	srv := masters60(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := clientAt(t, redistest.Addrs(srv), WithRestartGuard(0))
	b := clientAt(t, redistest.Addrs(srv), WithRestartGuard(0))
	l, err := a.TryLock(ctx, "k", 5*time.Second)
	require.NoError(t, err)
	r, err := b.Resume(ctx, "k", l.Token(), 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, l.Fence(), r.Fence())
	require.NoError(t, r.Extend(ctx, 5*time.Second))
	require.NoError(t, r.Release(ctx))
	_, err = b.Resume(ctx, "k", l.Token(), 5*time.Second)
	require.ErrorIs(t, err, ErrLockNotHeld)

	h, err := a.TryLock(ctx, "r", 5*time.Second, WithOwner("o"))
	require.NoError(t, err)
	rh, err := b.Resume(ctx, "r", h.Token(), 5*time.Second, WithOwner("o"))
	require.NoError(t, err)
	assert.Equal(t, h.Fence(), rh.Fence())
	require.NoError(t, rh.Release(ctx))
	assert.True(t, errors.Is(h.Extend(ctx, time.Second), ErrLockLost), "its only hold released")
}

// The observer sees each Resume as a call of its own; a resumed lock's
// release reports how long this client held it.
func TestObserver_Resume(t *testing.T) {
	srv := masters(t, 3)
	rec := &recorder{}
	a, c := client(t, srv), client(t, srv, WithObserver(rec))
	ctx := context.Background()
	l, err := a.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	r, err := c.Resume(ctx, "k", l.Token(), time.Second)
	require.NoError(t, err)
	_, err = c.Resume(ctx, "k", "not-"+l.Token(), time.Second)
	require.ErrorIs(t, err, ErrLockNotHeld)
	time.Sleep(5 * time.Millisecond)
	require.NoError(t, r.Release(ctx))

	assert.Equal(t, []Op{OpResume, OpResume, OpRelease}, rec.starts)
	assert.Equal(t, []Outcome{OutcomeObtained, OutcomeNotHeld}, rec.calls(OpResume))
	assert.Equal(t, []Outcome{OutcomeReleased}, rec.calls(OpRelease))
	calls := rec.of(KindCall)
	require.Len(t, calls, 3)
	assert.GreaterOrEqual(t, calls[2].Held, 5*time.Millisecond, "held since the resume")
	assert.Empty(t, rec.of(KindAttempt), "a resume makes no acquisition attempt")
}

// The validity runs to the quorum-th longest TTL the holding masters have
// left, less its drift reserve: here the middle one of three.
func TestIntegration_Resume_ValidityIsTheQuorumthLongestTTL(t *testing.T) {
	srv := masters(t, 3)
	a, b := client(t, srv), client(t, srv)
	ctx := context.Background()
	l, err := a.TryLock(ctx, "k", 20*time.Second)
	require.NoError(t, err)
	waitHeld(t, "k", srv...)
	for i, ms := range []int{10000, 5000, 2000} {
		do(t, srv[i], "PEXPIRE", stored("k"), ms)
	}
	r, err := b.Resume(ctx, "k", l.Token(), time.Second)
	require.NoError(t, err)
	reserve := b.o.drift.Reserve(5 * time.Second)
	assert.LessOrEqual(t, r.Validity(), 5*time.Second-reserve)
	assert.Greater(t, r.Validity(), 5*time.Second-reserve-time.Second)
	require.NoError(t, r.Release(ctx))
}

// A plain lock's record counts only when it names the token: one left by
// another grant is passed over for the master's floor.
func TestIntegration_Resume_ARecordOfAnotherTokenIsNotTheFence(t *testing.T) {
	srv := masters(t, 3)
	a, b := client(t, srv), client(t, srv)
	ctx := context.Background()
	l, err := a.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	waitHeld(t, "k", srv...)
	for _, s := range srv {
		do(t, s, "SET", suiteNames().Fence("k"), "1 not-"+l.Token(), "PX", 60000)
	}
	r, err := b.Resume(ctx, "k", l.Token(), 10*time.Second)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, r.Fence(), l.Fence(), "the floors, not the other token's record")
	require.NoError(t, r.Release(ctx))
}

// A Resume whose ctx ends says so, and not that the lock is not held.
func TestIntegration_Resume_CtxDone(t *testing.T) {
	srv := masters(t, 3)
	a, b := client(t, srv), client(t, srv)
	l, err := a.TryLock(context.Background(), "k", 10*time.Second)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.Resume(ctx, "k", l.Token(), time.Second)
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, ErrLockNotHeld)
	assert.Contains(t, err.Error(), "redlock: not resumed")
}
