package rueidisdriver_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// quietCheck returns a check that is due only on a fresh connection, as
// the guard's is once it has answers. Its question, CLIENT ID, names the
// connection it is asked on, as the server numbers its connections.
func quietCheck() func(string) *driver.Check {
	check := &driver.Check{Questions: [][]string{{"CLIENT", "ID"}}}
	return func(string) *driver.Check { return check }
}

// clientID returns the connection's id, as the answer to quietCheck's
// question gives it.
func clientID(t *testing.T, rep driver.Reply) int64 {
	t.Helper()
	require.Len(t, rep.Answers, 1)
	id, ok := rep.Answers[0].(int64)
	require.True(t, ok, "CLIENT ID answered %v", rep.Answers[0])
	return id
}

// A call carries the questions only on a connection no call has returned
// the answers of: the first one, and after the master drops the driver's
// connection (as a restart does) the new one, which the next call finds it
// needs, says so (Lost), and checks.
func TestEval_OnlyFreshConnectionsAreChecked(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m, err := rueidisdriver.New(standalone(t, srv[0].Addr()))
	require.NoError(t, err)
	defer m.Close()
	s := driver.NewScript("one", `return 1`)
	call := driver.Call{Script: s, Keys: []string{"k"}, Check: quietCheck()}

	rep, err := m.Eval(ctxFor(t, 2*time.Second), call)
	require.NoError(t, err)
	first := clientID(t, rep)
	for i := range 3 {
		rep, err = m.Eval(ctxFor(t, 2*time.Second), call)
		require.NoError(t, err)
		assert.Nil(t, rep.Answers, "call %d on the same connection", i)
		assert.False(t, rep.Lost)
	}

	_, err = srv[0].Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	require.NoError(t, err)
	rep, err = m.Eval(ctxFor(t, 2*time.Second), call)
	require.NoError(t, err)
	assert.True(t, rep.Lost, "the dead connection was replaced")
	assert.NotEqual(t, first, clientID(t, rep), "the new connection is checked")
}

// A connection stays fresh until the done that took its answers has
// returned: a call started from that done, on the same connection, carries
// the questions too, and only calls started after it has returned go
// without them. So on every path of Start: the call queued for the
// connection's sender, and the call that goes again in a goroutine after a
// NOSCRIPT.
func TestStart_FreshUntilTheAnswersDoneHasReturned(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	for _, tt := range []struct {
		name   string
		cached bool // the master has the script when the first call comes
	}{{"queued", true}, {"NOSCRIPT", false}} {
		t.Run(tt.name, func(t *testing.T) {
			m := newMaster(t, standalone(t, srv[0].Addr()))
			s := driver.NewScript(tt.name, fmt.Sprintf(`return %q`, tt.name))
			if tt.cached {
				_, err := srv[0].Do("SCRIPT", "LOAD", s.Src)
				require.NoError(t, err)
			} else {
				_, err := srv[0].Do("SCRIPT", "FLUSH")
				require.NoError(t, err)
			}
			call := driver.Call{Script: s, Keys: []string{"k"}, Check: quietCheck()}
			start := func(ctx context.Context, done func(driver.Reply, error)) {
				m.Start(ctx, call, driver.DoneFunc(done))
			}
			// The first call waits for the connection, opened in the
			// background, so that the calls below go on it.
			rep, err := m.Eval(ctxFor(t, 2*time.Second), driver.Call{Script: s, Keys: []string{"k"}})
			require.NoError(t, err)
			require.Nil(t, rep.Answers)
			if !tt.cached {
				_, err := srv[0].Do("SCRIPT", "FLUSH")
				require.NoError(t, err)
			}

			type outcome struct {
				rep driver.Reply
				err error
			}
			inner := make(chan outcome, 1)
			outer := make(chan outcome, 1)
			ctx := ctxFor(t, 5*time.Second)
			start(ctx, func(rep driver.Reply, err error) {
				if err == nil && rep.Answers != nil {
					// Within the done of the call that took the answers.
					start(ctx, func(rep driver.Reply, err error) { inner <- outcome{rep, err} })
				}
				outer <- outcome{rep, err}
			})
			o := <-outer
			require.NoError(t, o.err)
			assert.Equal(t, tt.name, o.rep.Value)
			id := clientID(t, o.rep)
			i := <-inner
			require.NoError(t, i.err)
			assert.Equal(t, tt.name, i.rep.Value)
			assert.NotNil(t, i.rep.Answers, "a call started before the answers' done returned went without the questions")
			assert.Equal(t, id, clientID(t, i.rep), "on the same connection")

			// Once the dones have returned, the connection is answered: the
			// driver marks it after they return, which a call started as
			// soon as they have handed their outcome over may precede.
			asked := 0
			for range 20 {
				got := make(chan outcome, 1)
				start(ctx, func(rep driver.Reply, err error) { got <- outcome{rep, err} })
				o = <-got
				require.NoError(t, o.err)
				if o.rep.Answers == nil {
					break
				}
				asked++
				time.Sleep(10 * time.Millisecond)
			}
			assert.Less(t, asked, 20, "the answered connection is asked on every call")
		})
	}
}

// serverStats returns the master's count of connections accepted, and of
// INFO and EVALSHA commands run.
func serverStats(t *testing.T, s *redistest.Server) (conns, infos, evals int) {
	t.Helper()
	stats, err := s.Info("stats")
	require.NoError(t, err)
	cmds, err := s.Info("commandstats")
	require.NoError(t, err)
	calls := func(v string) int {
		f, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
		n, _ := strconv.Atoi(f)
		return n
	}
	conns, err = strconv.Atoi(stats["total_connections_received"])
	require.NoError(t, err)
	return conns, calls(cmds["cmdstat_info"]), calls(cmds["cmdstat_evalsha"])
}

// Once the lock has its connection and the guard its answers, locks taken
// from many goroutines at once open no connection and ask the guard's
// questions no more: every call is one EVALSHA, pipelined on the one
// connection the driver holds.
func TestEval_SteadyStateDialsAndAsksNothing(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m, err := rueidisdriver.New(standalone(t, srv[0].Addr()))
	require.NoError(t, err)
	c, err := redlock.New([]driver.Master{m}, redlock.WithCloseDrivers(), redlock.WithRestartGuard(0), redlock.WithNodeTimeout(2*time.Second),
		redlock.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer c.Close()
	ctx := ctxFor(t, 30*time.Second)
	lockAll := func(prefix string) {
		var wg sync.WaitGroup
		errs := make(chan error, 32*10)
		for g := range 32 {
			wg.Go(func() {
				for i := range 10 {
					l, err := c.TryLock(ctx, fmt.Sprintf("%s-%d-%d", prefix, g, i), 10*time.Second)
					if err == nil {
						err = l.Release(ctx)
					}
					if err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
	lockAll("warm")
	conns0, infos0, evals0 := serverStats(t, srv[0])
	lockAll("steady")
	conns1, infos1, evals1 := serverStats(t, srv[0])
	// serverStats itself opens two connections and asks INFO twice
	// between the counts it reads.
	assert.Equal(t, 0, conns1-conns0-2, "connections opened, beside the test's own")
	assert.Equal(t, 0, infos1-infos0-2, "INFO asked, beside the test's own")
	assert.Equal(t, 2*32*10, evals1-evals0, "one EVALSHA per acquire and per release")
}

// A call to a stopped master whose connection is still to be dialled
// returns at its deadline, and the connection that rueidis dials later is
// not leaked (goleak, in TestMain).
func TestEval_StoppedMasterWhileDialling(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	opt := rueidis.ClientOption{InitAddress: []string{srv[0].Addr()}, DisableCache: true}
	opt.Dialer.Timeout = 500 * time.Millisecond
	client, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	defer client.Close()
	require.NoError(t, srv[0].Pause())
	defer srv[0].Resume()
	m, err := rueidisdriver.New(client) // its connection is dialled in the background
	require.NoError(t, err)

	s := driver.NewScript("one", `return 1`)
	for _, op := range []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"Eval", func(ctx context.Context) error {
			_, err := m.Eval(ctx, driver.Call{Script: s, Keys: []string{"k"}})
			return err
		}},
		{"Subscribe", func(ctx context.Context) error {
			sub, err := m.Subscribe(ctx)
			if err == nil {
				sub.Close()
			}
			return err
		}},
	} {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := op.do(ctx)
		cancel()
		assert.Error(t, err, op.name)
		assert.Less(t, time.Since(start), 400*time.Millisecond, "%s kept its deadline", op.name)
	}
	// Close waits for the dial in flight, which ends by rueidis' dial
	// timeout, and gives back what it leaves.
	require.NoError(t, m.Close())
}

// Busy callers of a master that stops answering (SIGSTOP) for 2 s, each
// call with a 50 ms deadline, do not dial it in a storm: the connections
// the master accepts once it continues, what it queued while stopped
// included, are at most 3.
func TestEval_HungMaster_NoDialStorm(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m, err := rueidisdriver.New(standalone(t, srv[0].Addr()))
	require.NoError(t, err)
	defer m.Close()
	s := driver.NewScript("one", `return 1`)
	call := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		_, err := m.Eval(ctx, driver.Call{Script: s, Keys: []string{"k"}})
		return err
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() { assert.NoError(t, call(2*time.Second)) })
	}
	wg.Wait()
	before, _, _ := serverStats(t, srv[0])

	require.NoError(t, srv[0].Pause())
	end := time.Now().Add(2 * time.Second)
	for range 16 {
		wg.Go(func() {
			for range 400 { // bounded in count; end bounds it in time
				if time.Now().After(end) {
					return
				}
				call(50 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	require.NoError(t, srv[0].Resume())
	time.Sleep(1500 * time.Millisecond) // the master accepts what waited
	after, _, _ := serverStats(t, srv[0])
	opened := after - before - 2 // less serverStats' own two
	t.Logf("%d connections opened over a 2s stop", opened)
	assert.LessOrEqual(t, opened, 3, "a stopped master was dialled in a storm")
	assert.NoError(t, call(2*time.Second), "calls succeed again after the resume")
}

// Close leaves the application's client open, unless told to close it.
func TestClose_LeavesTheClientOpen(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	for _, tt := range []struct {
		name   string
		opts   []rueidisdriver.Option
		closed bool
	}{
		{"default", nil, false},
		{"WithCloseClient", []rueidisdriver.Option{rueidisdriver.WithCloseClient()}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := standalone(t, srv[0].Addr())
			m, err := rueidisdriver.New(client, tt.opts...)
			require.NoError(t, err)
			require.NoError(t, m.Close())
			err = client.Do(ctxFor(t, time.Second), client.B().Ping().Build()).Error()
			if tt.closed {
				assert.True(t, errors.Is(err, rueidis.ErrClosing), "%v", err)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// A call without a script is refused, not a panic.
func TestEval_NoScriptIsInvalid(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m := newMaster(t, standalone(t, srv[0].Addr()))
	_, err := m.Eval(ctxFor(t, time.Second), driver.Call{Keys: []string{"k"}})
	assert.ErrorIs(t, err, rueidisdriver.ErrInvalid)
}

// Calls from many goroutines at once, through Eval and through Start, some
// with the guard's questions ahead of their script, go out in shared
// batches on one connection: each gets its own reply and its own answers.
func TestEval_ConcurrentCallsEachGetTheirOwnReply(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m := newMaster(t, standalone(t, srv[0].Addr()))
	echo := driver.NewScript("echo", `return ARGV[1]`)
	ask := &driver.Check{Questions: [][]string{{"ECHO", "a"}, {"ECHO", "b"}}, Always: true}
	ctx := ctxFor(t, 30*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 32*20)
	for g := range 32 {
		wg.Go(func() {
			for i := range 20 {
				arg := fmt.Sprintf("%d-%d", g, i)
				call := driver.Call{Script: echo, Keys: []string{"k"}, Args: []string{arg}}
				asked := (g+i)%3 == 0
				if asked {
					call.Check = func(string) *driver.Check { return ask }
				}
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				var rep driver.Reply
				var err error
				if g%2 == 0 {
					rep, err = m.Eval(cctx, call)
				} else {
					got := make(chan struct{})
					m.Start(cctx, call, driver.DoneFunc(func(r driver.Reply, e error) { rep, err = r, e; close(got) }))
					<-got
				}
				cancel()
				switch {
				case err != nil:
					errs <- err
				case rep.Value != arg:
					errs <- fmt.Errorf("call %s got %v", arg, rep.Value)
				case asked && !assert.ObjectsAreEqual([]any{"a", "b"}, rep.Answers):
					errs <- fmt.Errorf("call %s got answers %v", arg, rep.Answers)
				case !asked && rep.Answers != nil:
					errs <- fmt.Errorf("call %s got answers %v unasked", arg, rep.Answers)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
