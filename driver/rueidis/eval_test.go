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

// quietCheck returns a check that is due only when the connection's number
// moved since the last reply it saw, as the guard's is once it has answers.
func quietCheck() (func(string) *driver.Check, func(driver.Reply)) {
	var seen uint64
	check := func(string) *driver.Check {
		return &driver.Check{Questions: [][]string{{"INFO", "server"}}, Seen: seen}
	}
	return check, func(rep driver.Reply) { seen = rep.Dials }
}

// A call carries the questions only on a connection the guard has no
// answers from: the first one, and after the master drops the driver's
// connection (as a restart does) the new one, which the next call finds it
// needs, says so (Lost), and checks.
func TestEval_OnlyNewConnectionsAreChecked(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m, err := rueidisdriver.New(standalone(t, srv[0].Addr()))
	require.NoError(t, err)
	defer m.Close()
	s := driver.NewScript("one", `return 1`)
	check, saw := quietCheck()
	call := driver.Call{Script: s, Keys: []string{"k"}, Check: check}

	rep, err := m.Eval(ctxFor(t, 2*time.Second), call)
	require.NoError(t, err)
	assert.Len(t, rep.Answers, 1, "the first connection is new")
	saw(rep)
	for i := range 3 {
		rep, err = m.Eval(ctxFor(t, 2*time.Second), call)
		require.NoError(t, err)
		assert.Nil(t, rep.Answers, "call %d on the same connection", i)
		assert.False(t, rep.Lost)
		saw(rep)
	}

	_, err = srv[0].Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	require.NoError(t, err)
	rep, err = m.Eval(ctxFor(t, 2*time.Second), call)
	require.NoError(t, err)
	assert.True(t, rep.Lost, "the dead connection was replaced")
	assert.Len(t, rep.Answers, 1, "the new connection is checked")
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
