// Package drivertest is the contract every driver.Master passes, in the
// spirit of a transport test suite: the driver's own promises (replies in the
// neutral form, scripts by digest with a fall-back to their source, the
// restart guard's questions on the call's connection, deadlines, release
// announcements), then the lock's operations through it, and those of its
// other primitives (a semaphore, a read-write lock, a set of keys), all
// against real redis-server masters that the suite starts.
//
// A driver's tests call Run with a function that makes the driver for one
// master. The default driver (driver/redigo) runs it in this module; each
// adapter runs it in its own. A driver of Redis Cluster nodes also runs
// RunCluster, its own promises on a cluster, and RunClusterLock: the lock's
// suite again, each node a cluster of three shards. A driver over a
// Sentinel client runs RunSentinelFailover. Every call goes through the
// driver's Start, as the lock's do.
package drivertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// New makes the driver under test for the master at addr ("host:port", no
// password). The suite closes it.
type New func(t testing.TB, addr string) driver.Master

// Run runs the whole contract.
func Run(t *testing.T, newDriver New) {
	t.Run("Driver", func(t *testing.T) { RunDriver(t, newDriver) })
	t.Run("Lock", func(t *testing.T) { RunLock(t, newDriver) })
	t.Run("Primitives", func(t *testing.T) { RunPrimitives(t, newDriver) })
}

// open starts n masters and a driver for each.
func open(t *testing.T, n int, newDriver New) ([]*redistest.Server, []driver.Master) {
	t.Helper()
	srv := redistest.Start(t, n, redistest.Ephemeral)
	ds := make([]driver.Master, n)
	for i, s := range srv {
		ds[i] = closed(t, newDriver(t, s.Addr()))
	}
	return srv, ds
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// RunDriver checks the driver's own promises.
func RunDriver(t *testing.T, newDriver New) {
	t.Run("RepliesInTheNeutralForm", func(t *testing.T) {
		_, ds := open(t, 1, newDriver)
		s := driver.NewScript("shapes", `
			redis.call('SET', KEYS[1], ARGV[1])
			return {1, redis.call('GET', KEYS[1]), {2, 'x'}, false, redis.status_reply('FINE'), redis.error_reply('NOPE inner')}`)
		rep, err := eval(t, ds[0], ctxFor(t, 2*time.Second), driver.Call{Script: s, Keys: []string{"k"}, Args: []string{"v"}})
		require.NoError(t, err)
		assert.Equal(t, []any{int64(1), "v", []any{int64(2), "x"}, nil, "FINE", driver.Error("NOPE inner")}, rep.Value)
		assert.Nil(t, rep.Answers, "no check, no answers")
	})
	t.Run("ErrorRepliesAreDriverErrors", func(t *testing.T) {
		_, ds := open(t, 1, newDriver)
		s := driver.NewScript("fails", `return redis.error_reply('NOPERM not for you')`)
		_, err := eval(t, ds[0], ctxFor(t, 2*time.Second), driver.Call{Script: s, Keys: []string{"k"}})
		var de driver.Error
		require.True(t, errors.As(err, &de), "got %T %v", err, err)
		assert.Equal(t, "NOPERM", de.Code())
	})
	t.Run("ScriptSourceWhenTheMasterLostIt", func(t *testing.T) {
		srv, ds := open(t, 1, newDriver)
		s := driver.NewScript("echo", `return ARGV[1]`)
		for i := range 3 {
			_, err := srv[0].Do("SCRIPT", "FLUSH")
			require.NoError(t, err)
			rep, err := eval(t, ds[0], ctxFor(t, 2*time.Second), driver.Call{Script: s, Keys: []string{"k"}, Args: []string{fmt.Sprint(i)}})
			require.NoError(t, err, "try %d", i)
			assert.Equal(t, fmt.Sprint(i), rep.Value)
		}
	})
	t.Run("CheckQuestionsGoFirstOnTheSameConnection", func(t *testing.T) {
		_, ds := open(t, 1, newDriver)
		s := driver.NewScript("hinted", `redis.call('SET', KEYS[1], 'after'); return ARGV[#ARGV]`)
		s.TakesHint = true
		ask := &driver.Check{
			Questions: [][]string{{"INFO", "server"}, {"GET", "k"}, {"CONFIG", "GET", "appendonly"}, {"NOSUCHCOMMAND"}},
			Always:    true,
			Hint:      "the hint",
		}
		var servers []string
		call := driver.Call{Script: s, Keys: []string{"k"}, Args: []string{"a"},
			Check: func(server string) *driver.Check { servers = append(servers, server); return ask }}
		rep, err := eval(t, ds[0], ctxFor(t, 2*time.Second), call)
		require.NoError(t, err)
		require.Len(t, rep.Answers, 4)
		assert.Contains(t, rep.Answers[0], "run_id:")
		assert.Nil(t, rep.Answers[1], "asked before the script ran")
		assert.Equal(t, []any{"appendonly", "no"}, rep.Answers[2])
		var de driver.Error
		assert.True(t, errors.As(asError(rep.Answers[3]), &de), "an error answer is a driver.Error: %v", rep.Answers[3])
		assert.Equal(t, "", rep.Value, "the hint is blanked when the questions go with the call")
		assert.Equal(t, []string{rep.Server}, servers, "the check is asked once, for the server the call went to")

		// Not due once the connection has answered them: no questions, and
		// the hint goes to the script. Calls one at a time reuse a
		// connection: a driver that opened more than one asks on each of
		// them once, then no more.
		quiet := &driver.Check{Questions: ask.Commands(), Hint: "the hint"}
		call.Check = func(string) *driver.Check { return quiet }
		asked := 0
		for try := range 8 {
			rep, err = eval(t, ds[0], ctxFor(t, 2*time.Second), call)
			require.NoError(t, err)
			if rep.Answers == nil {
				assert.Equal(t, "the hint", rep.Value, "try %d", try)
				break
			}
			asked++
			assert.Len(t, rep.Answers, 4, "a fresh connection is checked")
			assert.Equal(t, "", rep.Value, "try %d: the hint is blanked when the questions go with the call", try)
		}
		assert.Less(t, asked, 8, "the questions still go on every call")
	})
	t.Run("ANewServerProcessIsAsked", func(t *testing.T) {
		srv, ds := open(t, 1, newDriver)
		s := driver.NewScript("one", `return 1`)
		ask := func(server string) *driver.Check {
			return &driver.Check{Questions: [][]string{{"INFO", "server"}}}
		}
		rep, err := eval(t, ds[0], ctxFor(t, 2*time.Second), driver.Call{Script: s, Keys: []string{"k"}, Check: ask})
		require.NoError(t, err)
		require.NotNil(t, rep.Answers, "a fresh connection is asked")
		before := runID(t, rep.Answers)
		require.NoError(t, srv[0].Kill())
		require.NoError(t, srv[0].Restart(redistest.Ephemeral))
		// The first call after the restart may meet the dead connection; the
		// driver replaces it within the deadline, and the new connection is
		// asked: no call reaches the new process without its answers.
		var after string
		for try := 0; try < 20 && after == ""; try++ {
			rep, err = eval(t, ds[0], ctxFor(t, 2*time.Second), driver.Call{Script: s, Keys: []string{"k"}, Check: ask})
			if err == nil {
				require.NotNil(t, rep.Answers, "try %d: a call reached the restarted master without the questions", try)
				after = runID(t, rep.Answers)
			}
		}
		require.NotEmpty(t, after, "no call after the restart was checked")
		assert.NotEqual(t, before, after, "the check reached the new process")
	})
	t.Run("DeadlineOfAStoppedMaster", func(t *testing.T) {
		srv, ds := open(t, 1, newDriver)
		s := driver.NewScript("one", `return 1`)
		_, err := eval(t, ds[0], ctxFor(t, 2*time.Second), driver.Call{Script: s, Keys: []string{"k"}})
		require.NoError(t, err)
		require.NoError(t, srv[0].Pause())
		resumed := false
		defer func() {
			if !resumed {
				srv[0].Resume()
			}
		}()
		start := time.Now()
		_, err = eval(t, ds[0], ctxFor(t, 100*time.Millisecond), driver.Call{Script: s, Keys: []string{"k"}})
		assert.Error(t, err)
		assert.Less(t, time.Since(start), time.Second, "the call kept its deadline")
		require.NoError(t, srv[0].Resume())
		resumed = true
		// Later calls get their own replies, not the late one.
		echo := driver.NewScript("echo", `return ARGV[1]`)
		for i := range 5 {
			rep, err := eval(t, ds[0], ctxFor(t, 2*time.Second), driver.Call{Script: echo, Keys: []string{"k"}, Args: []string{fmt.Sprint(i)}})
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprint(i), rep.Value)
		}
	})
	t.Run("StoppedMasterIsNotDialledInAStorm", func(t *testing.T) {
		// 16 goroutines keep calling a master stopped for 2 s, each call
		// with a 50 ms deadline. The connections it accepts, those queued
		// while it was stopped included, are counted once it runs again.
		const goroutines, deadline, stopped = 16, 50 * time.Millisecond, 2 * time.Second
		srv, ds := open(t, 1, newDriver)
		echo := driver.NewScript("echo", `return ARGV[1]`)
		_, err := eval(t, ds[0], ctxFor(t, 2*time.Second), driver.Call{Script: echo, Keys: []string{"k"}, Args: []string{"warm"}})
		require.NoError(t, err)
		before := connectionsReceived(t, srv[0], "")
		require.NoError(t, srv[0].Pause())
		resumed := false
		defer func() {
			if !resumed {
				srv[0].Resume()
			}
		}()
		callBusily(goroutines, stopped, func(g, i int) {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			eval(t, ds[0], ctx, driver.Call{Script: echo, Keys: []string{"k"}, Args: []string{fmt.Sprint(g, i)}})
		})
		require.NoError(t, srv[0].Resume())
		resumed = true
		require.Eventually(t, func() bool {
			_, err := eval(t, ds[0], ctxFor(t, time.Second), driver.Call{Script: echo, Keys: []string{"k"}, Args: []string{"after"}})
			return err == nil
		}, 5*time.Second, 10*time.Millisecond, "calls succeed again after the resume")
		opened := connectionsReceived(t, srv[0], "") - before - 1 // less the one asking
		t.Logf("%d connections opened over a %v stop", opened, stopped)
		assert.LessOrEqual(t, opened, 3, "a stopped master was dialled in a storm")
	})
	t.Run("UnansweredMasterIsNotDialledInAStorm", func(t *testing.T) { unansweredDials(t, newDriver, 0) })
	t.Run("UnansweredMasterIsNotDialledInAStormByCallsThatGiveUp", func(t *testing.T) {
		unansweredDials(t, newDriver, 5*time.Millisecond)
	})
	t.Run("RefusingMasterIsNotDialledInAStorm", func(t *testing.T) {
		// The master starts asking for a password the driver does not
		// have, and drops the driver's connection. Each connection it
		// accepts then answers the first call with an error, and closes
		// (Redis closes an unauthenticated connection that sends more than
		// ten arguments). 16 goroutines keep calling it for 2 s, each call
		// with a 50 ms deadline; the connections it accepts are counted.
		// Once it asks for none again, calls succeed.
		const goroutines, deadline, refusing, password = 16, 50 * time.Millisecond, 2 * time.Second, "refusing"
		srv, ds := open(t, 1, newDriver)
		echo := driver.NewScript("echo", `return ARGV[1]`)
		call := func(arg string) driver.Call {
			return driver.Call{Script: echo, Keys: []string{"k"}, Args: []string{arg, "2", "3", "4", "5", "6", "7", "8", "9", "10"}}
		}
		_, err := eval(t, ds[0], ctxFor(t, 2*time.Second), call("warm"))
		require.NoError(t, err)
		_, err = srv[0].Do("CONFIG", "SET", "requirepass", password)
		require.NoError(t, err)
		defer srv[0].DoAs(password, "CONFIG", "SET", "requirepass", "")
		_, err = srv[0].DoAs(password, "CLIENT", "KILL", "TYPE", "normal")
		require.NoError(t, err)
		received := func() int { return connectionsReceived(t, srv[0], password) }
		before := received()
		var refused atomic.Int64 // calls that failed with NOAUTH
		callBusily(goroutines, refusing, func(g, i int) {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			_, err := eval(t, ds[0], ctx, call(fmt.Sprint(g, i)))
			if de := driver.Error(""); errors.As(err, &de) && de.Code() == "NOAUTH" {
				refused.Add(1)
			}
		})
		opened := received() - before - 2 // less the two asking
		t.Logf("%d connections opened over %v of refusals; %d calls failed with NOAUTH", opened, refusing, refused.Load())
		assert.LessOrEqual(t, opened, 10, "a refusing master was dialled in a storm")
		assert.Positive(t, refused.Load(), "the calls say why they fail: NOAUTH")
		_, err = srv[0].DoAs(password, "CONFIG", "SET", "requirepass", "")
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			_, err := eval(t, ds[0], ctxFor(t, time.Second), call("after"))
			return err == nil
		}, 5*time.Second, 10*time.Millisecond, "calls succeed again once the master takes them")
	})
	t.Run("Subscription", func(t *testing.T) {
		srv, ds := open(t, 1, newDriver)
		assert.False(t, ds[0].Sharded(), "one master hears releases announced with PUBLISH")
		sub, err := ds[0].Subscribe(ctxFor(t, 2*time.Second))
		require.NoError(t, err)
		got, done := receive(sub)
		require.NoError(t, sub.Subscribe("c1", "c2"))
		assert.Equal(t, driver.Message{Kind: driver.Subscribed, Channel: "c1"}, next(t, got))
		assert.Equal(t, driver.Message{Kind: driver.Subscribed, Channel: "c2"}, next(t, got))
		_, err = srv[0].Do("PUBLISH", "c2", "x")
		require.NoError(t, err)
		assert.Equal(t, driver.Message{Kind: driver.Published, Channel: "c2", Payload: "x"}, next(t, got), "the announcement and what it says")
		require.NoError(t, sub.Unsubscribe("c1"))
		assert.Equal(t, driver.Message{Kind: driver.Unsubscribed, Channel: "c1"}, next(t, got))
		closeEndsReceive(t, sub, done)
	})
}

func asError(v any) error {
	err, _ := v.(error)
	return err
}

func runID(t *testing.T, answers []any) string {
	t.Helper()
	require.NotEmpty(t, answers)
	s, _ := answers[0].(string)
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	t.Fatalf("no run_id in %q", s)
	return ""
}

// callBusily has goroutines call back to back for d, call(g, i) being
// goroutine g's i-th call, and returns once they all stopped. The calls
// are bounded in count too.
func callBusily(goroutines int, d time.Duration, call func(g, i int)) {
	stop := make(chan struct{})
	done := make(chan struct{}, goroutines)
	for g := range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 100000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				call(g, i)
			}
		}()
	}
	time.Sleep(d)
	close(stop)
	for range goroutines {
		<-done
	}
}

// connectionsReceived returns how many connections s has accepted since it
// started, the one asking included; password, when not "", is the one s
// now asks for.
func connectionsReceived(t *testing.T, s *redistest.Server, password string) int {
	t.Helper()
	n, err := s.ConnectionsReceived(password)
	require.NoError(t, err, "INFO stats total_connections_received")
	return n
}

// unansweredDials has 16 goroutines call a master that answers no dial
// (stopped with its listen queue full, after the driver's connection
// dropped) for 2 s, each call with a 50 ms deadline and, if giveUp is not
// 0, cancelled after giveUp: a call whose answer came from elsewhere. It
// counts the dials the driver sends meanwhile, on this side: at most 3.
func unansweredDials(t *testing.T, newDriver New, giveUp time.Duration) {
	const goroutines, deadline, stopped = 16, 50 * time.Millisecond, 2 * time.Second
	srv := redistest.Start(t, 1, redistest.Ephemeral, "--tcp-backlog", "1")
	d := closed(t, newDriver(t, srv[0].Addr()))
	echo := driver.NewScript("echo", `return ARGV[1]`)
	_, err := eval(t, d, ctxFor(t, 2*time.Second), driver.Call{Script: echo, Keys: []string{"k"}, Args: []string{"warm"}})
	require.NoError(t, err)
	dials, stop := stopUnanswering(t, srv[0], "normal")
	callBusily(goroutines, stopped, func(g, i int) {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if giveUp > 0 {
			defer time.AfterFunc(giveUp, cancel).Stop()
		}
		eval(t, d, ctx, driver.Call{Script: echo, Keys: []string{"k"}, Args: []string{fmt.Sprint(g, i)}})
	})
	stop()
	t.Logf("%d dials to a master that answered none over %v", dials(), stopped)
	assert.LessOrEqual(t, dials(), 3, "a master that answers no dial was dialled in a storm")
}

// stopUnanswering drops s's connections of the kinds given (CLIENT KILL
// TYPE), stops s, and fills its listen queue (started one connection long:
// --tcp-backlog 1), so that no dial gets an answer until the test ends. It
// then counts the dials to s, as watchDials.
func stopUnanswering(t *testing.T, s *redistest.Server, kinds ...string) (dials func() int, stop func()) {
	t.Helper()
	for _, kind := range kinds {
		_, err := s.Do("CLIENT", "KILL", "TYPE", kind)
		require.NoError(t, err)
	}
	require.NoError(t, s.Pause())
	t.Cleanup(func() { s.Resume() })
	for range 3 { // the queue's length and more, so that the rest find it full
		if c, err := net.DialTimeout("tcp", s.Addr(), 100*time.Millisecond); err == nil {
			t.Cleanup(func() { c.Close() })
		}
	}
	return watchDials(t, s.Port)
}

// watchDials counts the connections this process opens to port on
// loopback from now on, sampling the kernel's sockets in SYN-SENT every
// 2 ms until stop: a dial to a master that does not answer waits there
// for its deadline, longer than that. dials returns the count so far.
func watchDials(t *testing.T, port int) (dials func() int, stop func()) {
	t.Helper()
	suffix := fmt.Sprintf(":%04X", port)
	sample := func(seen map[string]bool) {
		for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			b, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n")[1:] {
				// sl local_address rem_address st ...; st 02 is SYN-SENT.
				if f := strings.Fields(line); len(f) > 3 && f[3] == "02" && strings.HasSuffix(f[2], suffix) {
					seen[f[1]] = true
				}
			}
		}
	}
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp to watch the dials in")
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			mu.Lock()
			sample(seen)
			mu.Unlock()
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { close(quit); <-done }) }
	t.Cleanup(stop)
	return func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }, stop
}
