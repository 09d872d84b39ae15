package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSemaphore_BadInput(t *testing.T) {
	c, err := New(stubs(5))
	require.NoError(t, err)
	defer c.Close()
	var nilClient *Client
	for _, tc := range []struct {
		name    string
		c       *Client
		key     string
		permits int
		opts    []SemaphoreOption
	}{
		{"nil client", nilClient, "k", 2, nil},
		{"empty key", c, "", 2, nil},
		{"reserved key", c, "quorumlock:x", 2, nil},
		{"zero permits", c, "k", 0, nil},
		{"negative permits", c, "k", -1, nil},
		{"too many permits", c, "k", MaxPermits + 1, []SemaphoreOption{WithEveryMaster()}},
		{"a quorum of every master", c, "k", 4, nil},
		{"nil option", c, "k", 2, []SemaphoreOption{nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.c.Semaphore(tc.key, tc.permits, tc.opts...)
			require.ErrorIs(t, err, ErrInvalid)
			assert.Nil(t, s)
		})
	}
}

// The quorum is PermitQuorum's; every master only with WithEveryMaster;
// on one master, a single master is all there is.
func TestSemaphore_Quorum(t *testing.T) {
	for _, tc := range []struct {
		masters, permits, quorum int
		every                    bool
	}{
		{5, 1, 3, false}, {5, 2, 4, false}, {5, 3, 4, false}, {5, 4, 5, true}, {5, 100, 5, true},
		{3, 1, 2, false}, {3, 2, 3, true}, {1, 1, 1, false}, {1, 7, 1, false}, {7, 3, 6, false},
	} {
		c, err := New(stubs(tc.masters))
		require.NoError(t, err)
		if tc.every {
			_, err := c.Semaphore("k", tc.permits)
			assert.ErrorIs(t, err, ErrInvalid, "%d permits on %d masters without WithEveryMaster", tc.permits, tc.masters)
		}
		s, err := c.Semaphore("k", tc.permits, WithEveryMaster())
		require.NoError(t, err)
		assert.Equal(t, tc.quorum, s.Quorum(), "%d permits on %d masters", tc.permits, tc.masters)
		assert.Equal(t, tc.permits, s.Permits())
		assert.Equal(t, "k", s.Key())
		c.Close()
	}
}

func TestSemaphore_WithOwnerIsInvalid(t *testing.T) {
	c, _, _ := newFakeClient(t, []behaviour{healthy, healthy, healthy, healthy, healthy})
	s, err := c.Semaphore("k", 2)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = s.TryAcquire(ctx, time.Second, WithOwner("o"))
	require.ErrorIs(t, err, ErrInvalid)
}

// The scenario that majorities do not bound: on 5 masters with 2 permits,
// A reaches masters {0,1,2}, B {2,3,4}, C {0,1,3,4}, the others failing in
// turn, and no master ever admits more than 2. Each reached a majority;
// with the permit quorum (4 of 5), at most 2 of them may hold a permit.
func TestSemaphore_MajoritiesDoNotBoundTheHolders(t *testing.T) {
	c, fakes, _ := newFakeClient(t, []behaviour{healthy, healthy, healthy, healthy, healthy})
	s, err := c.Semaphore("k", 2)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var held []*Lock
	for _, down := range [][]int{{3, 4}, {0, 1}, {2}} {
		for i, f := range fakes {
			f.setMode(healthy)
			for _, d := range down {
				if i == d {
					f.setMode(broken)
				}
			}
		}
		l, err := s.TryAcquire(ctx, 10*time.Second)
		if err == nil {
			held = append(held, l)
			continue
		}
		require.ErrorIs(t, err, ErrNotObtained, "with masters %v down", down)
	}
	assert.LessOrEqual(t, len(held), 2, "more holders than permits")
	for _, f := range fakes {
		f.mu.Lock()
		if s := f.liveSem("k"); s != nil {
			assert.LessOrEqual(t, len(s.ends), 2, "%s admitted more than 2", f.name)
		}
		f.mu.Unlock()
	}
}

// Callers that disagree on K get a *PermitsError, at once, naming both.
func TestSemaphore_PermitsDiffer(t *testing.T) {
	c, _, _ := newFakeClient(t, []behaviour{healthy, healthy, healthy, healthy, healthy})
	two, err := c.Semaphore("k", 2)
	require.NoError(t, err)
	three, err := c.Semaphore("k", 3)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := two.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err)
	defer l.Release(ctx)
	for _, acquire := range []func(context.Context, time.Duration, ...LockOption) (*Lock, error){three.TryAcquire, three.Acquire} {
		_, err = acquire(ctx, 10*time.Second)
		require.ErrorIs(t, err, ErrInvalid)
		var pe *PermitsError
		require.True(t, errors.As(err, &pe), "%v", err)
		assert.Equal(t, 3, pe.Permits)
		assert.Equal(t, 2, pe.Recorded)
		assert.Contains(t, err.Error(), "has 2 permits")
		assert.Contains(t, err.Error(), "asks for 3")
	}
}

// A permit is a *Lock: extended, fenced above the permits granted before
// it, released; and K permits are all there are.
func TestSemaphore_PermitIsALock(t *testing.T) {
	c, fakes, _ := newFakeClient(t, []behaviour{healthy, healthy, healthy, healthy, healthy})
	s, err := c.Semaphore("k", 2)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, err := s.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err)
	b, err := s.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err)
	assert.Greater(t, b.Fence(), a.Fence())
	_, err = s.TryAcquire(ctx, 10*time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, ErrHeld)
	require.NoError(t, a.Extend(ctx, 20*time.Second))
	require.NoError(t, a.Release(ctx))
	select {
	case <-a.Done():
	default:
		t.Fatal("a released permit's Done is open")
	}
	d, err := s.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err)
	assert.Greater(t, d.Fence(), b.Fence())
	require.NoError(t, b.Release(ctx))
	require.NoError(t, d.Release(ctx))
	for _, f := range fakes {
		assert.Empty(t, f.callsOf("fence"), "%s: the masters agreed on every count", f.name)
	}
}

// A permit's calls reach the observer as a lock's do, with the permit's
// quorum in the votes.
func TestSemaphore_Observed(t *testing.T) {
	rec := &recorder{}
	c, _, _ := newFakeClient(t, []behaviour{healthy, healthy, healthy, healthy, healthy}, WithObserver(rec))
	s, err := c.Semaphore("k", 2)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := s.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Extend(ctx, 10*time.Second))
	require.NoError(t, l.Release(ctx))
	assert.Equal(t, []Op{OpTryAcquire, OpExtend, OpRelease}, rec.starts)
	attempts := rec.of(KindAttempt)
	require.Len(t, attempts, 1)
	assert.Equal(t, OutcomeObtained, attempts[0].Outcome)
	assert.Equal(t, 5, attempts[0].Votes.Masters)
	assert.Equal(t, 4, attempts[0].Votes.Quorum, "the permit's quorum, not a majority")
	assert.GreaterOrEqual(t, attempts[0].Votes.Granted, 4)
}

// A client's WithQuorum above the permit quorum is kept, and its cost was
// the client's choice: no WithEveryMaster is asked for.
func TestSemaphore_ClientQuorumAbove(t *testing.T) {
	c, err := New(stubs(5), WithQuorum(5))
	require.NoError(t, err)
	defer c.Close()
	s, err := c.Semaphore("k", 2)
	require.NoError(t, err)
	assert.Equal(t, 5, s.Quorum())
}
