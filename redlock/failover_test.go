package redlock

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// waitUptime waits until every server has been up for at least d, as INFO
// reads it (a second less than it says, as the guard does).
func waitUptime(t *testing.T, d time.Duration, srv ...*redistest.Server) {
	t.Helper()
	for _, s := range srv {
		for i := 0; ; i++ {
			require.Less(t, i, 400, "%s never reached an uptime of %v", s.Addr(), d)
			if time.Duration(uptime(t, s)-1)*time.Second >= d {
				break
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
}

// The failover of a managed primary endpoint: node 2's address is a
// forwarder that moves from master M3 to its replica R3, which was detached
// (promoted) before client A took the lock and so lacks A's key. Client B
// had talked to every master before. With the guard, R3 does not vote while
// A's lock can still be valid: B is refused. With the guard off, B gets the
// lock from node 0 and R3 while A holds it: the two holders the guard
// prevents. The same holds when the address moves to another master that
// was never a replica and has long been up: only its new run_id tells.
func TestIntegration_Failover_ToALaggingReplica(t *testing.T) {
	const ttl = 2 * time.Second
	for _, tc := range []struct {
		name    string
		replica bool // the address moves to M3's replica; else to another master
		guard   bool
		why     string // in the distrust and the warning, with the guard
	}{
		{"promoted replica, guard on", true, true, "promoted"},
		{"promoted replica, guard off: the control", true, false, ""},
		{"another master long up, guard on", false, true, "another server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := masters(t, 3)
			var r3 *redistest.Server
			if tc.replica {
				r3 = redistest.StartReplica(t, srv[2], aclUser(t)...)
			} else {
				r3 = masters(t, 1)[0]
			}
			fwd := redistest.NewForwarder(t, srv[2].Addr())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			window := ttl + DefaultDriftMargin + ttl/100
			l := &logs{}
			bOpts := []Option{WithLogger(slog.New(l))}
			if !tc.guard {
				bOpts = append(bOpts, WithRestartGuard(0))
			}
			b := suiteClientAt(t, []string{srv[0].Addr(), srv[1].Addr(), fwd.Addr()}, bOpts...)
			// B knows the masters, and they have been up for longer than
			// its window: it trusts every one of them.
			waitUptime(t, window, srv...)
			warm, err := b.TryLock(ctx, "warm", ttl)
			require.NoError(t, err)
			require.NoError(t, warm.Release(ctx))
			st, err := b.Inspect(ctx, "k")
			require.NoError(t, err)
			require.False(t, st.Nodes[2].Quarantined, st.Nodes[2].Distrust)

			// R3 is detached before A's grant: it will lack A's key. A does
			// not reach node 0, so it holds the lock on M2 and M3 only.
			if tc.replica {
				require.NoError(t, r3.Promote())
			} else {
				waitUptime(t, window, r3) // its uptime alone would let it vote
			}
			a := suiteClientAt(t, []string{deadAddr(t), srv[1].Addr(), fwd.Addr()}, WithRestartGuard(0))
			la, err := a.TryLock(ctx, "k", ttl)
			require.NoError(t, err)
			require.Equal(t, la.Token(), getString(t, srv[2], "k"))
			require.Equal(t, "", getString(t, r3, "k"), "R3 lags")

			// The endpoint moves to R3.
			fwd.Repoint(r3.Addr())
			var lb *Lock
			for i := 0; la.Validity() > 200*time.Millisecond; i++ {
				require.Less(t, i, 1000)
				if lb, err = b.TryLock(ctx, "k", ttl); err == nil {
					break
				}
				require.ErrorIs(t, err, ErrNotObtained)
				time.Sleep(20 * time.Millisecond)
			}
			if !tc.guard {
				require.NotNil(t, lb, "the control: with the guard off, B gets the lock from node 0 and R3")
				assert.Positive(t, la.Validity(), "while A still holds it")
				t.Logf("guard off: B got the lock with %v of A's validity left", la.Validity())
				return
			}
			require.Nil(t, lb, "B got the lock while A held it")
			st, err = b.Inspect(ctx, "k")
			require.NoError(t, err)
			assert.True(t, st.Nodes[2].Quarantined)
			w := l.warnings(fwd.Addr())
			require.Len(t, w, 1, "one warning for the failover: %v", w)
			assert.Contains(t, w[0], tc.why)

			// Once A's lock has run out and R3's quarantine is over, B gets
			// the lock, with a larger fence.
			lctx, lcancel := context.WithTimeout(ctx, window+3*time.Second)
			defer lcancel()
			lb, err = b.Lock(lctx, "k", ttl)
			require.NoError(t, err)
			assert.Greater(t, lb.Fence(), la.Fence())
			assert.Len(t, l.warnings(fwd.Addr()), 1, "warned once")
		})
	}
}

// Fences stay strictly increasing across a failover to a lagging replica.
// Three masters; node 2 fails over to its replica R3. A's locks go to nodes
// 1 and 2, raising their counters; R3 was detached after the first of them,
// so it holds node 2's counter from then. B's quorum is then nodes 0 and 2:
// node 0 counted the key only once, long before, and R3's counter is old.
// Counting on, B would get a fence below A's last. The promoted replica
// must restart its fences above everything counted before.
func TestIntegration_Failover_FencesKeepGrowing(t *testing.T) {
	for _, version := range []string{"7", "6.0"} {
		t.Run("Redis "+version, func(t *testing.T) {
			// Redis 6.0 has no channel rules: its masters run as the
			// default user, in the ACL suite too.
			var srv []*redistest.Server
			at, users := suiteClientAt, aclUser(t)
			if version == "6.0" {
				srv, at, users = masters60(t, 3), clientAt, nil
			} else {
				srv = masters(t, 3)
			}
			r3 := redistest.StartReplica(t, srv[2], users...)
			fwd := redistest.NewForwarder(t, srv[2].Addr())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			// Node 0 counts the key first, alone: its counter starts lowest.
			zero := at(t, append([]string{srv[0].Addr()}, deadAddrs(t, 2)...), WithRestartGuard(0))
			_, err := zero.TryLock(ctx, "k", time.Second)
			require.ErrorIs(t, err, ErrNotObtained)
			time.Sleep(5 * time.Millisecond) // the others' clock seeds start a few ms later

			a := at(t, []string{deadAddr(t), srv[1].Addr(), fwd.Addr()}, WithRestartGuard(0))
			var fence int64
			for i := range 20 {
				l, err := a.TryLock(ctx, "k", time.Second)
				require.NoError(t, err)
				fence = l.Fence()
				require.NoError(t, l.Release(ctx))
				if i == 0 {
					require.NoError(t, redistest.WaitReplicated(srv[2], r3, 5*time.Second))
					require.NoError(t, r3.Promote())
				}
			}

			fwd.Repoint(r3.Addr())
			const window = 300 * time.Millisecond
			waitUptime(t, window, srv[0])
			b := at(t, []string{srv[0].Addr(), deadAddr(t), fwd.Addr()}, WithRestartGuard(window))
			lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
			defer lcancel()
			l, err := b.Lock(lctx, "k", time.Second)
			require.NoError(t, err)
			assert.Greater(t, l.Fence(), fence, "B's fence, from node 0 and the promoted replica, is not above A's last")
			require.NoError(t, l.Release(ctx))
		})
	}
}

// A client that never saw the old master can still tell a promoted replica
// (INFO replication keeps master_replid2): it does not count it until a
// window has passed since the promotion is known, from the stamp any
// client's acquire left there, or else from first sight. A client made
// after that window trusts it at once.
func TestIntegration_Failover_NewClientsKnowThePromotion(t *testing.T) {
	const window = time.Second
	// The TTL bounds the node timeout (a tenth of it): a new client dials
	// and reads the guard's state within it, so it is not too short for a
	// loaded machine. The window is set apart from it.
	const ttl = time.Second
	srv := masters(t, 2)
	r := redistest.StartReplica(t, srv[1], aclUser(t)...)
	require.NoError(t, r.Promote())
	waitUptime(t, window, srv[0], r)
	addrs := []string{srv[0].Addr(), r.Addr()}
	ctx := context.Background()

	l := &logs{}
	first := suiteClientAt(t, addrs, WithRestartGuard(window), WithLogger(slog.New(l)))
	_, err := first.TryLock(ctx, "k", ttl)
	require.ErrorIs(t, err, ErrNotObtained, "the promoted master does not vote yet")
	promotedSeen := time.Now()
	st, err := first.Inspect(ctx, "k")
	require.NoError(t, err)
	assert.Contains(t, st.Nodes[1].Distrust, "promoted")
	require.Len(t, l.warnings(r.Addr()), 1)
	assert.Contains(t, l.warnings(r.Addr())[0], "promoted")

	// A newcomer while the window runs: it reads the stamp, and waits only
	// for the rest of the window.
	second := suiteClientAt(t, addrs, WithRestartGuard(window))
	_, err = second.TryLock(ctx, "k", ttl)
	require.ErrorIs(t, err, ErrNotObtained)

	// Sleep past the window and past whole-second rounding of uptimes.
	time.Sleep(time.Until(promotedSeen.Add(window + 2100*time.Millisecond)))
	third := suiteClientAt(t, addrs, WithRestartGuard(window))
	lt, err := third.TryLock(ctx, "k", ttl)
	require.NoError(t, err, "a client that first sees the master after the window trusts it at once")
	require.NoError(t, lt.Release(ctx))
	ls, err := second.TryLock(ctx, "k", ttl)
	require.NoError(t, err)
	require.NoError(t, ls.Release(ctx))
}

// A replica given as a master never votes, even a writable one
// (replica-read-only no), which would grant locks nobody else sees.
func TestIntegration_Replica_NeverVotes(t *testing.T) {
	srv := masters(t, 2)
	r := redistest.StartReplica(t, srv[0], append([]string{"--replica-read-only", "no"}, aclUser(t)...)...)
	ctx := context.Background()
	l := &logs{}
	c := suiteClientAt(t, []string{srv[1].Addr(), r.Addr(), deadAddr(t)}, WithRestartGuard(0), WithLogger(slog.New(l)))
	_, err := c.TryLock(ctx, "k", time.Second)
	require.ErrorIs(t, err, ErrNotObtained, "granted with a replica's vote")
	st, err := c.Inspect(ctx, "k")
	require.NoError(t, err)
	assert.True(t, st.Nodes[1].Quarantined)
	assert.Contains(t, st.Nodes[1].Distrust, "replica")
	for range 3 {
		_, err = c.TryLock(ctx, "k", time.Second)
		require.ErrorIs(t, err, ErrNotObtained)
	}
	w := l.warnings(r.Addr())
	require.Len(t, w, 1, "warned once")
	assert.True(t, strings.Contains(w[0], "replica"), w[0])
}
