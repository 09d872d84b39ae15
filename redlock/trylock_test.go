package redlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock"
)

// TestTryLock_EveryOutcomeOfFiveMasters drives one attempt over all 3^5 ways
// five masters can grant, refuse (held by another owner) or hang past the
// node timeout (and apply the SET anyway). For each it checks the verdict,
// the validity, and the rollback: on failure every master the token may
// have reached gets exactly one owner-checked delete, refusing masters get
// none, and no key of the attempt is left anywhere; on success nothing is
// rolled back and Release later clears every master, late ones included.
func TestTryLock_EveryOutcomeOfFiveMasters(t *testing.T) {
	const n, ttl = 5, 10 * time.Second
	modes := []behaviour{healthy, foreign, hang}
	for combo := range int(math.Pow(3, n)) {
		outs := make([]behaviour, n)
		granting := 0
		for i, c := 0, combo; i < n; i, c = i+1, c/3 {
			outs[i] = modes[c%3]
			if outs[i] == healthy {
				granting++
			}
		}
		t.Run(fmt.Sprint(outs), func(t *testing.T) {
			c, fakes, clk := newFakeClient(t, outs, WithRestartGuard(0))
			timeout := c.nodeTimeout(ttl)
			start := clk.Now()
			type result struct {
				l   *Lock
				err error
			}
			got := make(chan result, 1)
			done := make(chan struct{})
			go func() {
				l, err := c.TryLock(context.Background(), "k", ttl)
				got <- result{l, err}
				close(done)
			}()
			if granting < c.Quorum() {
				drive(t, clk, fakes, timeout, done)
			}
			r := <-got
			token := anyToken(t, fakes)

			if granting >= c.Quorum() {
				require.NoError(t, r.err)
				reserve := quorumlock.Drift{Factor: DefaultDriftFactor, Margin: DefaultDriftMargin}.Reserve(ttl)
				assert.Equal(t, ttl-reserve, r.l.Validity(), "no time passed on the fake clock")
				assert.Equal(t, start.Add(ttl-reserve), r.l.Until())
				assert.Equal(t, token, r.l.Token())
				for i, f := range fakes {
					assert.Empty(t, f.callsOf("release"), "master %d: nothing rolled back", i)
				}
				// Let the hung masters land their late yes, then release everything.
				clk.Advance(timeout)
				require.NoError(t, r.l.Release(context.Background()))
			} else {
				require.ErrorIs(t, r.err, ErrNotObtained)
				assert.Nil(t, r.l)
				if outs[0] == foreign || outs[1] == foreign || outs[2] == foreign || outs[3] == foreign || outs[4] == foreign {
					var ne *NodeError
					assert.True(t, errors.As(r.err, &ne), "refusals are reported as *NodeError: %v", r.err)
				}
			}
			require.NoError(t, c.Close()) // waits for background clean-ups
			for i, f := range fakes {
				switch {
				case granting >= c.Quorum():
					// Release returns at quorum; the rest follow within the node timeout.
					assert.Eventually(t, func() bool { return len(f.callsOf("release")) == 1 }, 2*time.Second, time.Millisecond,
						"master %d: one delete, from Release", i)
				case outs[i] == foreign:
					assert.Empty(t, f.callsOf("release"), "master %d refused: nothing to roll back", i)
				default:
					assert.Equal(t, []string{token}, f.callsOf("release"), "master %d: exactly one rollback of this token", i)
				}
				assert.Eventually(t, func() bool { return !f.holdsToken("k", token) }, 2*time.Second, time.Millisecond,
					"master %d keeps the attempt's key", i)
			}
		})
	}
}

func TestTryLock_QuarantinedMastersDoNotVote(t *testing.T) {
	for _, tc := range []struct {
		quarantined, durable int // the first quarantined masters restarted; durable of them fsync every write
		ok                   bool
	}{{0, 0, true}, {1, 0, true}, {2, 0, true}, {3, 0, false}, {5, 0, false}, {3, 1, true}, {5, 5, true}} {
		t.Run(fmt.Sprintf("%d restarted, %d durable", tc.quarantined, tc.durable), func(t *testing.T) {
			c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(time.Minute))
			for i := range tc.quarantined {
				fakes[i].h = health{known: true, bootAt: clk.Now().Add(-time.Second), durable: i < tc.durable}
			}
			l, err := c.TryLock(context.Background(), "k", time.Second)
			if !tc.ok {
				require.ErrorIs(t, err, ErrNotObtained)
				assert.Contains(t, err.Error(), "quarantined after a restart")
				assert.ErrorIs(t, err, ErrQuarantined)
				require.NoError(t, c.Close())
				for i, f := range fakes {
					assert.NotEmpty(t, f.callsOf("release"), "master %d: rolled back, quarantined or not", i)
					assert.Empty(t, f.holder("k"), "master %d keeps the key", i)
				}
				return
			}
			require.NoError(t, err)
			require.NoError(t, l.Release(context.Background()))
		})
	}
}

func TestTryLock_QuarantineEndsWithTheWindow(t *testing.T) {
	c, fakes, clk := newFakeClient(t, []behaviour{healthy, healthy, healthy}, WithRestartGuard(time.Minute))
	for _, f := range fakes[:2] {
		f.h = health{known: true, bootAt: clk.Now().Add(-59 * time.Second)}
	}
	_, err := c.TryLock(context.Background(), "k", time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	clk.Advance(time.Second)
	l, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(context.Background()))
}

// A quorum that agrees too slowly leaves no validity: the attempt fails and
// rolls back, though every master said yes.
func TestTryLock_NoValidityLeft_RollsBack(t *testing.T) {
	const ttl = 200 * time.Millisecond // node timeout 20ms
	c, fakes, _ := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0), WithDriftMargin(188*time.Millisecond))
	for _, f := range fakes {
		f.advance = 3800 * time.Microsecond // three answers take >= 11.4ms > the 10ms validity
	}
	_, err := c.TryLock(context.Background(), "k", ttl)
	require.ErrorIs(t, err, ErrNotObtained)
	assert.Contains(t, err.Error(), "leaving validity")
	require.NoError(t, c.Close())
	for i, f := range fakes {
		assert.Len(t, f.callsOf("release"), 1, "master %d rolled back", i)
		assert.Empty(t, f.holder("k"))
	}
}

func TestTryLock_ContendedKey(t *testing.T) {
	c, _, _ := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	a, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	_, err = c.TryLock(context.Background(), "k", time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	var ne *NodeError
	require.ErrorAs(t, err, &ne)
	assert.Contains(t, ne.Error(), "held by another owner")
	require.NoError(t, a.Release(context.Background()))
	b, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	assert.Greater(t, b.Fence(), a.Fence())
	assert.NotEqual(t, a.Token(), b.Token())
}

func TestTryLock_CancelledContext(t *testing.T) {
	c, _, _ := newFakeClient(t, []behaviour{hang, hang, hang}, WithRestartGuard(0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.TryLock(ctx, "k", time.Second)
	assert.ErrorIs(t, err, ErrNotObtained)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestLock_RetriesUntilContextDone(t *testing.T) {
	c, fakes, clk := newFakeClient(t, []behaviour{foreign, foreign, foreign}, WithRestartGuard(0), WithRetry(ConstantBackoff(10*time.Millisecond)))
	ctx, cancel := clk.WithTimeout(context.Background(), 95*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	var err error
	go func() { _, err = c.Lock(ctx, "k", time.Second); close(done) }()
	drive(t, clk, fakes, 5*time.Millisecond, done)
	assert.ErrorIs(t, err, ErrNotObtained)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestLock_GivesUpWhenBackoffSaysSo(t *testing.T) {
	c, fakes, clk := newFakeClient(t, []behaviour{foreign, foreign, foreign}, WithRestartGuard(0), WithRetry(LimitRetry(ConstantBackoff(time.Millisecond), 3)))
	done := make(chan struct{})
	var err error
	go func() { _, err = c.Lock(context.Background(), "k", time.Second); close(done) }()
	drive(t, clk, fakes, time.Millisecond, done)
	assert.ErrorIs(t, err, ErrNotObtained)
	assert.Len(t, fakes[0].callsOf("acquire"), 4, "the first attempt and three retries")
}

func TestLock_WaitsForTheHolder(t *testing.T) {
	c, _, clk := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0), WithRetry(ConstantBackoff(time.Hour)))
	a, err := c.TryLock(context.Background(), "k", 10*time.Second)
	require.NoError(t, err)
	done := make(chan struct{})
	var b *Lock
	go func() { b, err = c.Lock(context.Background(), "k", time.Second); close(done) }()
	// The waiter parks on its backoff, bounded by the holder's remaining TTL.
	require.NoError(t, clk.BlockUntil(context.Background(), 1))
	require.NoError(t, a.Release(context.Background())) // wakes the local waiter at once
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the release did not wake the waiter")
	}
	require.NoError(t, err)
	assert.Greater(t, b.Fence(), a.Fence())
	require.NoError(t, b.Release(context.Background()))
}

// Without a release, the waiter retries when the holder's keys expire: the
// acquire script reports the holder's remaining TTL, which bounds the wait.
func TestLock_HolderTTLBoundsTheWait(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0), WithRetry(ConstantBackoff(time.Hour)))
	_, err := c.TryLock(context.Background(), "k", 2*time.Second)
	require.NoError(t, err)
	done := make(chan struct{})
	var b *Lock
	go func() { b, err = c.Lock(context.Background(), "k", time.Second); close(done) }()
	drive(t, clk, fakes, 100*time.Millisecond, done)
	require.NoError(t, err)
	assert.LessOrEqual(t, clk.Since(time.Unix(1_000_000, 0)), 3*time.Second, "the wait ended with the holder's TTL, not the hour of backoff")
	require.NoError(t, b.Release(context.Background()))
}

// anyToken returns the token of the attempt, from whichever master saw it.
func anyToken(t *testing.T, fakes []*fakeNode) string {
	t.Helper()
	for _, f := range fakes {
		if calls := f.callsOf("acquire"); len(calls) > 0 {
			return calls[0]
		}
	}
	t.Fatal("no master saw an acquire")
	return ""
}

// With too few masters up, waiters retry at the pace of the backoff: a
// failed attempt with some votes and no contender is an outage, not a split.
func TestLock_OutageIsNotASplitVote(t *testing.T) {
	c, fakes, clk := newFakeClient(t, []behaviour{healthy, healthy, broken, broken, broken},
		WithRestartGuard(0), WithRetry(ConstantBackoff(100*time.Millisecond)))
	ctx, cancel := clk.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { c.Lock(ctx, "k", 10*time.Second); close(done) }()
	drive(t, clk, fakes, 10*time.Millisecond, done)
	n := len(fakes[0].callsOf("acquire"))
	t.Logf("%d attempts in one second of outage", n)
	assert.LessOrEqual(t, n, 12, "about one attempt per 100ms of backoff")
}

// After a split vote every contender that heard from every master agrees on
// the winner: the most masters held, ties to the smaller token, whether or
// not those masters vote. The winner keeps its grants and asks the other
// masters again; the others yield and wait. With a master silent, nobody
// can know the winner: all retry soon, with jitter. An outage, or a holder
// with a possible quorum, is no split.
func TestAttempt_SplitVote(t *testing.T) {
	type tc struct {
		name    string
		modes   []behaviour
		others  []string // the holders the foreign masters report
		token   string
		split   bool
		rounds  int   // acquires sent to master 0
		abstain []int // masters whose votes do not count (as in restart quarantine)
	}
	for _, tc := range []tc{
		// Master 4 grants but abstains: this attempt holds three masters,
		// two of them voting, against b's two.
		{"won with a master abstaining", []behaviour{healthy, healthy, foreign, foreign, healthy}, []string{"", "", "b", "b", ""}, "a", true, 1 + maxKeepRounds, []int{4}},
		{"won on the token, masters abstaining", []behaviour{healthy, healthy, foreign, foreign, foreign}, []string{"", "", "b", "b", "c"}, "a", true, 1 + maxKeepRounds, []int{0, 2}},
		{"no contender, masters abstaining", []behaviour{healthy, healthy, healthy, healthy, healthy}, nil, "a", false, 1, []int{0, 1, 2}},
		{"lost on the count with a master abstaining", []behaviour{healthy, foreign, foreign, foreign, healthy}, []string{"", "b", "b", "c", ""}, "z", false, 1, []int{4}},
		{"won on the token", []behaviour{healthy, healthy, foreign, foreign, foreign}, []string{"", "", "b", "b", "c"}, "a", true, 1 + maxKeepRounds, nil},
		{"won on the count", []behaviour{healthy, healthy, foreign, foreign, foreign}, []string{"", "", "b", "c", "d"}, "z", true, 1 + maxKeepRounds, nil},
		{"lost on the token", []behaviour{healthy, healthy, foreign, foreign, foreign}, []string{"", "", "b", "b", "c"}, "z", false, 1, nil},
		{"lost on the count", []behaviour{healthy, foreign, foreign, foreign, foreign}, []string{"", "b", "b", "c", "c"}, "a", false, 1, nil},
		{"seen in part", []behaviour{healthy, healthy, foreign, foreign, broken}, []string{"", "", "b", "c", ""}, "a", true, 1, nil},
		{"we won outright", []behaviour{healthy, foreign, foreign, healthy, healthy}, nil, "a", false, 1, nil},
		{"another may hold a quorum", []behaviour{healthy, healthy, foreign, foreign, foreign}, nil, "a", false, 1, nil},
		{"an outage", []behaviour{healthy, healthy, broken, broken, broken}, nil, "a", false, 1, nil},
		{"too few answered for any quorum", []behaviour{healthy, foreign, broken, broken, broken}, nil, "a", false, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, fakes, clk := newFakeClient(t, tc.modes, WithRestartGuard(0),
				WithTokenGenerator(func() (string, error) { return tc.token, nil }))
			var answered []*fakeNode // healthy masters answer first, so a round's count is known
			for i, m := range tc.modes {
				if m == healthy {
					answered = append(answered, fakes[i])
				}
			}
			for i, o := range tc.others {
				fakes[i].other = o
			}
			for _, i := range tc.abstain {
				fakes[i].h = health{veto: "abstains in this test"}
			}
			for i, m := range tc.modes {
				if m == foreign {
					fakes[i].answerAfter = answered
				}
			}
			done := make(chan struct{})
			var res outcome
			go func() { res = c.attempt(context.Background(), "k", time.Second, lockOptions{}, nil, nil); close(done) }()
			drive(t, clk, fakes, time.Millisecond, done)
			if res.lock != nil {
				assert.False(t, tc.split)
				return
			}
			assert.Equal(t, tc.split, res.split)
			assert.Len(t, fakes[0].callsOf("acquire"), tc.rounds)
		})
	}
}

// A roll-back that cannot reach a master is tried again until it does: the
// master may be starting, with the failed attempt's acquire still on its way.
func TestRollback_RetriesAMasterItCouldNotReach(t *testing.T) {
	c, fakes, clk := newFakeClient(t, []behaviour{hang, foreign, foreign, foreign, healthy}, WithRestartGuard(0))
	done := make(chan struct{})
	var err error
	go func() { _, err = c.TryLock(context.Background(), "k", 10*time.Second); close(done) }()
	require.Eventually(t, func() bool { return len(fakes[0].callsOf("acquire")) == 1 }, 5*time.Second, 100*time.Microsecond)
	fakes[0].setMode(broken) // the acquire is on its way; the master refuses what follows
	drive(t, clk, fakes, time.Millisecond, done)
	require.ErrorIs(t, err, ErrNotObtained)
	token := fakes[0].callsOf("acquire")[0]
	// Time passes: the late acquire lands, and the roll-back meets the refusal.
	require.Eventually(t, func() bool {
		if allAnswered(fakes) && clk.Timers() > 0 {
			clk.Advance(time.Millisecond)
		}
		return fakes[0].holdsToken("k", token) && len(fakes[0].callsOf("release")) >= 1
	}, 5*time.Second, 100*time.Microsecond, "the late acquire landed and a roll-back was refused")
	failed := len(fakes[0].callsOf("release"))

	fakes[0].setMode(healthy)
	assert.Eventually(t, func() bool {
		if allAnswered(fakes) && clk.Timers() > 0 {
			clk.Advance(time.Second) // the retry's backoff
		}
		return !fakes[0].holdsToken("k", token)
	}, 5*time.Second, time.Millisecond, "the retried roll-back cleared the master")
	assert.Greater(t, len(fakes[0].callsOf("release")), failed)
}

// A silent master (one that answers nothing) is not waited for: with its vote
// the only way left to a quorum, the attempt ends at once, and rolls back
// on it once its request returns. A master that answered last time is
// waited for, up to the node timeout.
func TestTryLock_SilentMasterIsNotWaitedFor(t *testing.T) {
	for _, silent := range []bool{true, false} {
		t.Run(fmt.Sprintf("silent=%v", silent), func(t *testing.T) {
			// Masters 0 and 1 are held by another, 2 and 3 grant, 4 hangs: only
			// master 4 can still make the quorum.
			// The refusals come after the grants, so that the round ends with
			// votes in: a split, which the attempt would hear out.
			c, fakes, clk := newFakeClient(t, []behaviour{foreign, foreign, healthy, healthy, hang}, WithRestartGuard(0))
			fakes[0].answerAfter = fakes[2:4]
			fakes[1].answerAfter = fakes[2:4]
			fakes[4].mu.Lock()
			fakes[4].mute = silent
			fakes[4].mu.Unlock()
			done := make(chan error, 1)
			go func() {
				_, err := c.TryLock(context.Background(), "k", time.Second)
				done <- err
			}()
			var err error
			waited := false
			select {
			case err = <-done:
			case <-time.After(map[bool]time.Duration{true: 5 * time.Second, false: 50 * time.Millisecond}[silent]):
				waited = true
				// Master 4's request times out, and every wait on the clock ends.
				require.Eventually(t, func() bool {
					clk.Advance(100 * time.Millisecond)
					select {
					case err = <-done:
						return true
					default:
						return false
					}
				}, 5*time.Second, time.Millisecond, "the attempt did not end at the node timeout")
			}
			require.Equal(t, !silent, waited, "waited for master 4, whose last call got a reply: %v", !silent)
			require.ErrorIs(t, err, ErrNotObtained)
			token := fakes[2].callsOf("acquire")[0]
			for _, i := range []int{2, 3} {
				assert.False(t, fakes[i].holdsToken("k", token), "master %d kept the failed attempt's token", i)
			}
			if silent {
				// Master 4's request is still out: its roll-back follows it.
				assert.Empty(t, fakes[4].callsOf("release"))
				clk.Advance(time.Second)
			}
			assert.Eventually(t, func() bool { return slices.Contains(fakes[4].callsOf("release"), token) },
				5*time.Second, time.Millisecond, "master 4 was not rolled back")
			assert.False(t, fakes[4].holdsToken("k", token), "master 4 kept the failed attempt's late grant")
		})
	}
}

// Masters all taken for silent, as a loaded machine's are once each missed
// a node timeout, are waited for: without them no quorum can be reached,
// so not waiting could only fail every attempt, and their answers are what
// shows they answer again.
func TestTryLock_EveryMasterSilent_IsWaitedFor(t *testing.T) {
	c, fakes, _ := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0))
	for _, f := range fakes {
		f.mu.Lock()
		f.mute = true
		f.mu.Unlock()
	}
	l, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err, "the attempt did not wait for masters that answer")
	require.NoError(t, l.Release(context.Background()))
}
