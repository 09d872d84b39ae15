package redigo_test

import (
	"context"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

const (
	defaultPassword = "default-Pw1"
	alicePassword   = "alice-Pw2"
	bobPassword     = "bob-Pw3"
)

// startACLRedis starts a server whose default user needs defaultPassword,
// with two ACL users: alice, who may do anything, and bob, who may only
// touch keys under "bob:". It returns its address.
func startACLRedis(t *testing.T) string {
	t.Helper()
	return startRedisWithAuth(t,
		[]any{"ACL", "SETUSER", "alice", "on", ">" + alicePassword, "~*", "&*", "+@all"},
		[]any{"ACL", "SETUSER", "bob", "on", ">" + bobPassword, "~bob:*", "+@all"},
		[]any{"CONFIG", "SET", "requirepass", defaultPassword},
	).Addr()
}

// startRedisWithAuth starts a server and runs the setup commands on it.
// redistest waits for a server with an unauthenticated PING, so
// authentication is switched on after the start rather than with
// --requirepass or --user arguments.
func startRedisWithAuth(t *testing.T, setup ...[]any) *redistest.Server {
	t.Helper()
	srv := startRedis(t)
	conn, err := redis.Dial("tcp", srv.Addr(), redis.DialReadTimeout(waitLimit), redis.DialWriteTimeout(waitLimit))
	require.NoError(t, err)
	defer conn.Close()
	for _, cmd := range setup {
		_, err := conn.Do(cmd[0].(string), cmd[1:]...)
		require.NoError(t, err, "%v", cmd[:2])
	}
	return srv
}

func TestAuth_RightCredentials(t *testing.T) {
	addr := startACLRedis(t)
	tests := []struct {
		name   string
		addr   string
		opts   []redigo.Option
		wantMe string // ACL WHOAMI
	}{
		{"password option", addr, []redigo.Option{redigo.WithAuth("", defaultPassword)}, "default"},
		{"default user by name", addr, []redigo.Option{redigo.WithAuth("default", defaultPassword)}, "default"},
		{"ACL user option", addr, []redigo.Option{redigo.WithAuth("alice", alicePassword)}, "alice"},
		{"password in URL", "redis://:" + defaultPassword + "@" + addr, nil, "default"},
		{"lone password in URL", "redis://" + defaultPassword + "@" + addr, nil, "default"},
		{"ACL user in URL", "redis://alice:" + alicePassword + "@" + addr, nil, "alice"},
		{"option overrides URL", "redis://alice:wrong@" + addr, []redigo.Option{redigo.WithAuth("bob", bobPassword)}, "bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPool(t, tt.addr, tt.opts...)
			me, err := redis.String(p.Do(testCtx(t), "ACL", "WHOAMI"))
			require.NoError(t, err)
			assert.Equal(t, tt.wantMe, me)
			assert.EqualValues(t, 1, redigo.Dials(p))
		})
	}
}

func TestAuth_WrongCredentials(t *testing.T) {
	addr := startACLRedis(t)
	tests := []struct {
		name   string
		addr   string
		opts   []redigo.Option
		secret string // must not appear in the error
	}{
		{"wrong password", addr, []redigo.Option{redigo.WithAuth("", "nope-Pw9")}, "nope-Pw9"},
		{"wrong ACL password", addr, []redigo.Option{redigo.WithAuth("alice", bobPassword)}, bobPassword},
		{"unknown user", addr, []redigo.Option{redigo.WithAuth("mallory", alicePassword)}, alicePassword},
		{"wrong password in URL", "redis://alice:nope-Pw8@" + addr, nil, "nope-Pw8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPool(t, tt.addr, tt.opts...)
			ctx := testCtx(t)
			_, err := p.Do(ctx, "PING")
			require.Error(t, err, "AUTH runs while dialling, so the call fails")
			assert.Contains(t, err.Error(), "WRONGPASS")
			assert.NotContains(t, err.Error(), tt.secret)

			_, err = redigo.Dial(ctx, p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "WRONGPASS")
			assert.Zero(t, redigo.Dials(p), "a dial that failed AUTH is not counted")
		})
	}
}

func TestAuth_NoCredentials_CommandsRefused(t *testing.T) {
	addr := startACLRedis(t)
	p := newPool(t, addr)
	_, err := do(testCtx(t), p, "GET", "k")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NOAUTH")
}

func TestAuth_ACLUserIsTheOneUsed(t *testing.T) {
	addr := startACLRedis(t)
	p := newPool(t, addr, redigo.WithAuth("bob", bobPassword))
	ctx := testCtx(t)

	_, err := do(ctx, p, "SET", "bob:k", "v")
	assert.NoError(t, err, "bob may write his own keys")
	_, err = do(ctx, p, "SET", "alice:k", "v")
	require.Error(t, err, "bob wrote a key outside his pattern")
	assert.Contains(t, err.Error(), "NOPERM")
}

func TestAuth_RequirepassOnly(t *testing.T) {
	addr := startRedisWithAuth(t, []any{"CONFIG", "SET", "requirepass", defaultPassword}).Addr()

	ok := newPool(t, addr, redigo.WithAuth("", defaultPassword))
	assert.Equal(t, "PONG", mustDo(t, ok, "PING"))

	bad := newPool(t, addr, redigo.WithAuth("", "nope-Pw7"))
	_, err := bad.Do(testCtx(t), "PING")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "nope-Pw7")
}

// A wrong password fails every dial: 16 goroutines calling for 2 s dial
// the master a few times, backing off, not at every call; and every call
// says why it failed. Each call's deadline is one that a dial, AUTH
// included, meets on a loaded machine: a dial that timed out would be the
// failure to report instead.
func TestAuth_WrongPassword_NoDialStorm(t *testing.T) {
	const goroutines, deadline, calling = 16, 250 * time.Millisecond, 2 * time.Second
	srv := startRedisWithAuth(t, []any{"CONFIG", "SET", "requirepass", defaultPassword})
	p := newPool(t, srv.Addr(), redigo.WithAuth("", "nope-Pw9"))
	before := received(t, srv)
	for _, err := range pingBusily(p, goroutines, calling, deadline) {
		require.Error(t, err)
		assert.Contains(t, err.Error(), "WRONGPASS")
	}
	dialled := received(t, srv) - before - 1 // less the one asking
	t.Logf("%d dials over %v", dialled, calling)
	assert.LessOrEqual(t, dialled, 10, "a master that refuses the password was dialled in a storm")
}

// A master that asks for a password and is stopped while the driver has no
// connection open takes each dial's connection into its listen queue, and
// answers none of their AUTHs: the dials fail at their deadline. Were each
// call to dial again, every one of those connections would be accepted at
// once when the master runs again. Over a 2 s stop, one driver with 16 busy
// goroutines dials it at most 3 times.
func TestAuth_StoppedMaster_NoDialStorm(t *testing.T) {
	const goroutines, deadline, stopped = 16, 50 * time.Millisecond, 2 * time.Second
	srv := startRedisWithAuth(t, []any{"CONFIG", "SET", "requirepass", defaultPassword})
	p := newPool(t, srv.Addr(), redigo.WithAuth("", defaultPassword))
	_, err := p.Do(testCtx(t), "PING")
	require.NoError(t, err)
	_, err = srv.DoAs(defaultPassword, "CLIENT", "KILL", "TYPE", "normal")
	require.NoError(t, err)
	before := received(t, srv)
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { srv.Resume() }) // a second SIGCONT does nothing
	pingBusily(p, goroutines, stopped, deadline)
	require.NoError(t, srv.Resume())
	// The master accepts the queued connections before the one asking.
	dialled := received(t, srv) - before - 1
	t.Logf("%d connections dialled over a %v stop", dialled, stopped)
	assert.LessOrEqual(t, dialled, 3, "a stopped master was dialled in a storm")
	require.Eventually(t, func() bool {
		_, err := p.Do(testCtx(t), "PING")
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "calls succeed again after the resume")
}

// pingBusily has goroutines PING p back to back for d, each PING within
// deadline, and returns each goroutine's last error. The PINGs are bounded
// in count too.
func pingBusily(p *redigo.Redis, goroutines int, d, deadline time.Duration) []error {
	stop := make(chan struct{})
	errs := make(chan error, goroutines)
	for range goroutines {
		go func() {
			var err error
			defer func() { errs <- err }()
			for i := 0; i < 100000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				_, err = p.Do(ctx, "PING")
				cancel()
			}
		}()
	}
	time.Sleep(d)
	close(stop)
	out := make([]error, 0, goroutines)
	for range goroutines {
		out = append(out, <-errs)
	}
	return out
}

// received returns how many connections srv, asking for defaultPassword,
// has accepted, the one asking included.
func received(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	n, err := srv.ConnectionsReceived(defaultPassword)
	require.NoError(t, err)
	return n
}
