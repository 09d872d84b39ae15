package redlock

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// checkMessage asserts what every failed call's error promises: one line of
// at most 200 characters that matches want, an *AttemptError whose masters'
// outcomes number as counts says, and errors.Is for each of is.
func checkMessage(t *testing.T, err error, want string, counts map[Answer]int, is ...error) {
	t.Helper()
	require.Error(t, err)
	msg := err.Error()
	t.Logf("%d chars: %s", len(msg), msg)
	assert.NotContains(t, msg, "\n", "one line")
	assert.LessOrEqual(t, len(msg), 200)
	assert.Regexp(t, "^"+want+"$", msg)
	var ae *AttemptError
	require.ErrorAs(t, err, &ae)
	total := 0
	for o, n := range counts {
		assert.Equal(t, n, ae.Count(o), "masters %v: %s", o, ae.Detail())
		total += n
	}
	assert.Equal(t, len(ae.Masters), total, "every master is counted: %s", ae.Detail())
	detail := strings.Split(ae.Detail(), "\n")
	for i, m := range ae.Masters {
		assert.Equal(t, i, m.Node)
		assert.NotEmpty(t, m.Addr)
		if m.Answer == MasterHeld && m.Why != "" { // a line of waiters refused it: the detail says so, not that another holds it
			assert.Contains(t, detail[i], m.Why)
			assert.NotContains(t, detail[i], "held by another owner")
		}
	}
	for _, e := range is {
		assert.ErrorIs(t, err, e)
	}
}

// Every message, against real masters put in the state that produces it.
func TestIntegration_ErrorMessages(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		run    func(t *testing.T) error
		want   string
		op     Op // the AttemptError's
		counts map[Answer]int
		is     []error
	}{{
		name: "held by another client",
		run: func(t *testing.T) error {
			srv := masters(t, 5)
			_, err := client(t, srv[:3]).TryLock(ctx, "k", 10*time.Second)
			require.NoError(t, err)
			waitHeld(t, "k", srv[:3]...)
			_, err = client(t, srv).TryLock(ctx, "k", 10*time.Second)
			return err
		},
		want:   `redlock: not obtained: held by another client \(3 of 5 masters\)`,
		op:     OpTryLock,
		counts: map[Answer]int{MasterHeld: 3, MasterAgreed: 2},
		is:     []error{ErrNotObtained, ErrHeld},
	}, {
		name: "fresh masters in quarantine",
		run: func(t *testing.T) error {
			_, err := client(t, masters(t, 3), WithRestartGuard(time.Minute)).TryLock(ctx, "k", 10*time.Second)
			return err
		},
		want:   `redlock: not obtained: 3 of 3 masters quarantined after a restart, first votes in [0-9ms]+`,
		op:     OpTryLock,
		counts: map[Answer]int{MasterAbstained: 3},
		is:     []error{ErrNotObtained, ErrQuarantined},
	}, {
		name: "Lock gives up in the quarantine",
		run: func(t *testing.T) error {
			c := client(t, masters(t, 3), WithRestartGuard(time.Minute))
			ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			_, err := c.Lock(ctx, "k", 10*time.Second)
			return err
		},
		want:   `redlock: not obtained after 3[0-9]{2}ms: 3 of 3 masters quarantined after a restart, first votes in [0-9ms]+; gave up: context deadline exceeded`,
		op:     OpLock,
		counts: map[Answer]int{MasterAbstained: 3},
		is:     []error{ErrNotObtained, ErrQuarantined, context.DeadlineExceeded},
	}, {
		name: "three of five paused",
		run: func(t *testing.T) error {
			srv := masters(t, 5)
			c := client(t, srv)
			for _, s := range srv[:3] {
				require.NoError(t, s.Pause())
				t.Cleanup(func() { s.Resume() })
			}
			// Round after round, the same count: first while the paused
			// masters are waited for, then once they are known silent.
			var err error
			for i := range 4 {
				_, err = c.TryLock(ctx, "k", 5*time.Second)
				require.Regexp(t, `: 3 of 5 masters gave no reply within 500ms$`, err.Error(), "round %d", i)
			}
			return err
		},
		want:   `redlock: not obtained: 3 of 5 masters gave no reply within 500ms`,
		op:     OpTryLock,
		counts: map[Answer]int{MasterNoReply: 3, MasterAgreed: 2},
		is:     []error{ErrNotObtained},
	}, {
		name: "two of three unreachable",
		run: func(t *testing.T) error {
			srv := masters(t, 1)
			_, err := suiteClientAt(t, append([]string{srv[0].Addr()}, deadAddrs(t, 2)...), WithRestartGuard(0)).TryLock(ctx, "k", 5*time.Second)
			return err
		},
		want:   `redlock: not obtained: 2 of 3 masters unreachable \(connection refused\)`,
		op:     OpTryLock,
		counts: map[Answer]int{MasterFailed: 2, MasterAgreed: 1},
		is:     []error{ErrNotObtained},
	}, {
		name: "one held, one paused, one granted",
		run: func(t *testing.T) error {
			srv := masters(t, 3)
			_, err := client(t, srv[:1], WithQuorum(1)).TryLock(ctx, "k", 10*time.Second)
			require.NoError(t, err)
			require.NoError(t, srv[1].Pause())
			t.Cleanup(func() { srv[1].Resume() })
			_, err = client(t, srv).TryLock(ctx, "k", 5*time.Second)
			return err
		},
		want:   `redlock: not obtained: 1 of 3 masters granted, 2 needed: 1 held by another client, 1 gave no reply within 500ms`,
		op:     OpTryLock,
		counts: map[Answer]int{MasterAgreed: 1, MasterHeld: 1, MasterNoReply: 1},
		is:     []error{ErrNotObtained, ErrHeld},
	}, {
		name: "ACL without the lock's keys: NOPERM",
		run: func(t *testing.T) error {
			_, urls := aclMasters(t, 3, "~app:*", "&app:*", "+@all", "-@dangerous")
			_, err := clientAt(t, urls, WithRestartGuard(0)).Lock(ctx, "job", 10*time.Second)
			return err
		},
		want:   `redlock: not obtained: 3 of 3 masters refuse the lock's commands \(NOPERM\): grant the ACL user the lock's keys and ~quorumlock:\* &quorumlock:\*`,
		op:     OpLock,
		counts: map[Answer]int{MasterFailed: 3},
		is:     []error{ErrNotObtained, ErrMisconfigured},
	}, {
		name: "wrong password: WRONGPASS",
		run: func(t *testing.T) error {
			srv, _ := aclMasters(t, 3, "~*", "&*", "+@all")
			urls := make([]string, len(srv))
			for i, s := range srv {
				urls[i] = "redis://app:wrong@" + s.Addr()
			}
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err := clientAt(t, urls, WithRestartGuard(0)).Lock(ctx, "job", 10*time.Second)
			return err
		},
		want:   `redlock: not obtained: 3 of 3 masters refuse the lock's commands \(WRONGPASS\): give the user and password in the address: redis://user:password@host:port`,
		op:     OpLock,
		counts: map[Answer]int{MasterFailed: 3},
		is:     []error{ErrNotObtained, ErrMisconfigured},
	}, {
		name: "replicas given as masters: READONLY",
		run: func(t *testing.T) error {
			srv := masters(t, 1)
			r1, r2 := redistest.StartReplica(t, srv[0], aclUser(t)...), redistest.StartReplica(t, srv[0], aclUser(t)...)
			_, err := suiteClientAt(t, []string{r1.Addr(), r2.Addr(), srv[0].Addr()}, WithRestartGuard(0)).Lock(ctx, "job", 10*time.Second)
			return err
		},
		want:   `redlock: not obtained: 2 of 3 masters refuse the lock's commands \(READONLY\): the address is a replica; give its master's`,
		op:     OpLock,
		counts: map[Answer]int{MasterFailed: 2, MasterAgreed: 1},
		is:     []error{ErrNotObtained, ErrMisconfigured},
	}, {
		name: "a quorum too late: no validity left",
		run: func(t *testing.T) error {
			// 1µs of validity: any round trip takes longer. A TTL of a
			// second leaves a loaded machine a node timeout of 100ms.
			c := client(t, masters(t, 3), WithDriftFactor(0), WithDriftMargin(time.Second-time.Microsecond))
			_, err := c.TryLock(ctx, "k", time.Second)
			return err
		},
		want:   `redlock: not obtained: a quorum agreed, but the attempt took [0-9.]+[µm]?s, leaving validity -[0-9.]+[µm]?s`,
		op:     OpTryLock,
		counts: map[Answer]int{MasterAgreed: 3},
		is:     []error{ErrNotObtained},
	}, {
		name: "ctx cancelled before TryLock",
		run: func(t *testing.T) error {
			ctx, cancel := context.WithCancel(ctx)
			cancel()
			_, err := client(t, masters(t, 3)).TryLock(ctx, "k", 5*time.Second)
			return err
		},
		want:   `redlock: not obtained: 3 of 3 masters failed \(cancelled\); gave up: context canceled`,
		op:     OpTryLock,
		counts: map[Answer]int{MasterFailed: 3},
		is:     []error{ErrNotObtained, context.Canceled},
	}, {
		name: "extend: the keys are gone",
		run: func(t *testing.T) error {
			srv := masters(t, 3)
			l, err := client(t, srv).TryLock(ctx, "k", 5*time.Second)
			require.NoError(t, err)
			deleteHeld(t, "k", srv...)
			return l.Extend(ctx, 5*time.Second)
		},
		want:   `redlock: lock lost: 3 of 3 masters no longer hold it`,
		op:     OpExtend,
		counts: map[Answer]int{MasterNotHeld: 3},
		is:     []error{ErrLockLost, ErrLockNotHeld},
	}, {
		name: "extend: two of three paused",
		run: func(t *testing.T) error {
			srv := masters(t, 3)
			l, err := client(t, srv).TryLock(ctx, "k", 5*time.Second)
			require.NoError(t, err)
			waitHeld(t, "k", srv...)
			for _, s := range srv[:2] {
				require.NoError(t, s.Pause())
				t.Cleanup(func() { s.Resume() })
			}
			return l.Extend(ctx, 5*time.Second)
		},
		want:   `redlock: lock lost: 1 of 3 masters extended it, 2 needed: 2 gave no reply within 500ms`,
		op:     OpExtend,
		counts: map[Answer]int{MasterAgreed: 1, MasterNoReply: 2},
		is:     []error{ErrLockLost},
	}, {
		name: "release: the keys are gone",
		run: func(t *testing.T) error {
			srv := masters(t, 3)
			l, err := client(t, srv).TryLock(ctx, "k", 5*time.Second)
			require.NoError(t, err)
			deleteHeld(t, "k", srv...)
			return l.Release(ctx)
		},
		want:   `redlock: lock not held: no master still held it`,
		op:     OpRelease,
		counts: map[Answer]int{MasterNotHeld: 3},
		is:     []error{ErrLockNotHeld},
	}, {
		name: "release: two of three paused",
		run: func(t *testing.T) error {
			srv := masters(t, 3)
			c := client(t, srv)
			l, err := c.TryLock(ctx, "k", 5*time.Second)
			require.NoError(t, err)
			waitHeld(t, "k", srv...)
			for _, s := range srv[:2] {
				require.NoError(t, s.Pause())
			}
			err = l.Release(ctx)
			for _, s := range srv[:2] {
				s.Resume()
			}
			return err
		},
		want:   `redlock: not released: 1 of 3 masters answered, 2 needed: 2 gave no reply within 500ms; the lock is as it was`,
		op:     OpRelease,
		counts: map[Answer]int{MasterAgreed: 1, MasterNoReply: 2},
	}, {
		name: "TryLockAll: a key held",
		run: func(t *testing.T) error {
			srv := masters(t, 3)
			_, err := client(t, srv).TryLock(ctx, "b", 10*time.Second)
			require.NoError(t, err)
			waitHeld(t, "b", srv...)
			_, err = client(t, srv).TryLockAll(ctx, []string{"a", "b"}, 10*time.Second)
			return err
		},
		want:   `redlock: not obtained: held by another client \(3 of 3 masters\)`,
		op:     OpTryLockAll,
		counts: map[Answer]int{MasterHeld: 3},
		is:     []error{ErrNotObtained, ErrHeld},
	}, {
		name: "semaphore: every permit held",
		run: func(t *testing.T) error {
			return whilePermitsHeld(t, func(s *Semaphore) error {
				_, err := s.TryAcquire(ctx, 10*time.Second)
				return err
			})
		},
		want:   `redlock: not obtained: held by another client \(3 of 3 masters\)`,
		op:     OpTryAcquire,
		counts: map[Answer]int{MasterHeld: 3},
		is:     []error{ErrNotObtained, ErrHeld},
	}, {
		name: "semaphore: Acquire gives up",
		run: func(t *testing.T) error {
			return whilePermitsHeld(t, func(s *Semaphore) error {
				ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				_, err := s.Acquire(ctx, 10*time.Second)
				return err
			})
		},
		want:   `redlock: not obtained after 3[0-9]{2}ms: held by another client \(3 of 3 masters\); gave up: context deadline exceeded`,
		op:     OpAcquire,
		counts: map[Answer]int{MasterHeld: 3},
		is:     []error{ErrNotObtained, ErrHeld, context.DeadlineExceeded},
	}, {
		name: "TryRLock: a writer waits",
		run: func(t *testing.T) error {
			return whileAWriterWaits(t, func(rw *RWLock) error {
				_, err := rw.TryRLock(ctx, 10*time.Second)
				return err
			})
		},
		want:   `redlock: not obtained: a writer waits for the key \(3 of 3 masters\)`,
		op:     OpTryRLock,
		counts: map[Answer]int{MasterHeld: 3},
		is:     []error{ErrNotObtained, ErrHeld},
	}, {
		name: "RLock gives up: a writer waits",
		run: func(t *testing.T) error {
			return whileAWriterWaits(t, func(rw *RWLock) error {
				ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				_, err := rw.RLock(ctx, 10*time.Second)
				return err
			})
		},
		want:   `redlock: not obtained after 3[0-9]{2}ms: a writer waits for the key \(3 of 3 masters\); gave up: context deadline exceeded`,
		op:     OpRLock,
		counts: map[Answer]int{MasterHeld: 3},
		is:     []error{ErrNotObtained, ErrHeld, context.DeadlineExceeded},
	}, {
		name: "TryLock: others wait in line",
		run: func(t *testing.T) error {
			srv := masters(t, 3)
			holder := client(t, srv)
			l, err := holder.TryLock(ctx, "doc", 10*time.Second)
			require.NoError(t, err)
			waitHeld(t, "doc", srv...)
			placeOn(t, holder, "doc", "ahead", 1, 10*time.Second)
			require.NoError(t, l.Release(ctx))
			require.NoError(t, holder.Close()) // the release's last deletes have landed: the key is free everywhere
			_, err = client(t, srv).TryLock(ctx, "doc", 10*time.Second)
			return err
		},
		want:   `redlock: not obtained: others wait in line for the key \(3 of 3 masters\)`,
		op:     OpTryLock,
		counts: map[Answer]int{MasterHeld: 3},
		is:     []error{ErrNotObtained, ErrHeld},
	}, {
		name: "TryRLock: a writer holds",
		run: func(t *testing.T) error {
			srv := masters(t, 3)
			rw, err := client(t, srv).RWLock("doc")
			require.NoError(t, err)
			_, err = rw.TryLock(ctx, 10*time.Second)
			require.NoError(t, err)
			waitHeld(t, "doc", srv...)
			rw, err = client(t, srv).RWLock("doc")
			require.NoError(t, err)
			_, err = rw.TryRLock(ctx, 10*time.Second)
			return err
		},
		want:   `redlock: not obtained: held by another client \(3 of 3 masters\)`,
		op:     OpTryRLock,
		counts: map[Answer]int{MasterHeld: 3},
		is:     []error{ErrNotObtained, ErrHeld},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(t)
			checkMessage(t, err, tc.want, tc.counts, tc.is...)
			var ae *AttemptError
			require.ErrorAs(t, err, &ae)
			// Op names the hold, whether the call waited or tried once.
			want := map[Op]string{OpLock: "lock", OpTryLock: "lock", OpAcquire: "acquire", OpTryAcquire: "acquire",
				OpRLock: "rlock", OpTryRLock: "rlock", OpTryLockAll: "lockall", OpExtend: "extend", OpRelease: "release"}[tc.op]
			require.NotEmpty(t, want, "no Op expected for %s", tc.op)
			assert.Equal(t, want, ae.Op)
		})
	}
}

// whilePermitsHeld runs take with a semaphore of one permit, on 3 masters,
// whose permit another client holds on every master.
func whilePermitsHeld(t *testing.T, take func(s *Semaphore) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv := masters(t, 3)
	s, err := client(t, srv).Semaphore("k", 1)
	require.NoError(t, err)
	_, err = s.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err)
	waitHeld(t, "k", srv...)
	s, err = client(t, srv).Semaphore("k", 1)
	require.NoError(t, err)
	return take(s)
}

// The message is written from the tally alone: each form, from outcomes
// made up, and its counts are the tally's.
// whileAWriterWaits runs read, a read hold's call on an RWLock of 3 masters, while
// another client's reader holds the key and a writer waits in line for it
// on every master.
func whileAWriterWaits(t *testing.T, read func(rw *RWLock) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	srv := masters(t, 3)
	reader, err := client(t, srv).RWLock("doc")
	require.NoError(t, err)
	_, err = reader.TryRLock(ctx, 10*time.Second)
	require.NoError(t, err)
	writer, err := client(t, srv).RWLock("doc")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		_, err := writer.Lock(ctx, 10*time.Second)
		assert.ErrorIs(t, err, context.Canceled, "the writer waits until the test ends")
	}()
	waitQueued(t, "doc", 1, srv)
	rw, err := client(t, srv).RWLock("doc")
	require.NoError(t, err)
	return read(rw)
}

func TestAcquireCause(t *testing.T) {
	const timeout = 50 * time.Millisecond
	of := func(os ...Answer) []MasterAnswer {
		ms := make([]MasterAnswer, len(os))
		for i, o := range os {
			ms[i] = MasterAnswer{Node: i, Addr: fmt.Sprintf("h:%d", i), Answer: o}
			switch o {
			case MasterAbstained:
				ms[i].Why, ms[i].VotesIn = "new or restarted, up 0s, votes in 8s", time.Duration(8+i)*time.Second
			case MasterFailed:
				ms[i].Why = "connection refused"
			}
		}
		return ms
	}
	const (
		A = MasterAgreed
		Q = MasterAbstained
		H = MasterHeld
		S = MasterNoReply
		F = MasterFailed
	)
	promoted := of(A, Q, Q)
	promoted[1].Why = "promoted from a replica, known for 2s, votes in 58s"
	vetoed := of(A, Q, Q)
	vetoed[2].VotesIn, vetoed[2].Why = 0, "it is a replica (role:slave), not a master; give the client the master's address"
	failedOther := of(A, F, F)
	failedOther[2].Why = "OOM"
	netOnly := of(A, F, F)
	netOnly[1].Why, netOnly[2].Why = "unreachable", "unreachable"
	tlsToo := of(A, F, F)
	tlsToo[1].Why = "tls: certificate required"
	for _, tc := range []struct {
		name string
		ms   []MasterAnswer
		want string
	}{
		{"held", of(A, A, H, H, H), "held by another client (3 of 5 masters)"},
		{"quarantined", of(Q, Q, Q), "3 of 3 masters quarantined after a restart, first votes in 8s"},
		{"quarantined and granted", of(A, A, Q, Q, Q), "3 of 5 masters quarantined after a restart, first votes in 10s"},
		{"quarantined and promoted", promoted, "2 of 3 masters quarantined after a restart or failover, first votes in 9s"},
		{"kept out for good", vetoed, "2 of 3 masters may not vote: it is a replica (role:slave), not a master; give the client the master's address"},
		{"no reply", of(A, A, S, S, S), "3 of 5 masters gave no reply within 50ms"},
		{"unreachable", of(A, F, F), "2 of 3 masters unreachable (connection refused)"},
		{"unreachable, no more said", netOnly, "2 of 3 masters unreachable"},
		{"unreachable, TLS", tlsToo, "2 of 3 masters unreachable (tls: certificate required, connection refused)"},
		{"failed otherwise", failedOther, "2 of 3 masters failed (connection refused, OOM)"},
		{"late grants", of(A, A, S), "2 of 3 masters granted, but too late: after the node timeout of 50ms"},
		{"mixed", of(A, H, S, F, Q), "1 of 5 masters granted, 3 needed: 1 held by another client, 1 quarantined, first votes in 12s, 1 gave no reply within 50ms, 1 unreachable (connection refused)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			quorum := len(tc.ms)/2 + 1
			got := acquireCause(tc.ms, quorum, timeout)
			assert.Equal(t, tc.want, got)
			e := &AttemptError{head: "redlock: not obtained", cause: got, Masters: tc.ms}
			assert.LessOrEqual(t, len(e.Error()), 200)
			// Each count in the text is a count of the list.
			t0 := tallied(tc.ms)
			for _, m := range regexp.MustCompile(`(\d+) (of \d+ masters )?(held|quarantined|gave no reply|unreachable|failed|may not vote)`).FindAllStringSubmatch(got, -1) {
				var n int
				fmt.Sscan(m[1], &n)
				o := map[string]Answer{"held": H, "quarantined": Q, "may not vote": Q, "gave no reply": S, "unreachable": F, "failed": F}[m[3]]
				assert.Equal(t, t0[o], n, "%q", m[0])
			}
		})
	}
}
