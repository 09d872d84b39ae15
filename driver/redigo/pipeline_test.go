package redigo_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// echo returns its first argument and its key: every call's reply names the
// call, so that a reply given to the wrong caller shows.
var echo = driver.NewScript("echo", `return {ARGV[1], KEYS[1]}`)

// setEcho writes its argument under its key, then returns it.
var setEcho = driver.NewScript("set-echo", `redis.call('SET', KEYS[1], ARGV[1]) return ARGV[1]`)

// echoCall is a call of echo whose reply must be {id, "k:"+id}.
func echoCall(id string) driver.Call {
	return driver.Call{Script: echo, Keys: []string{"k:" + id}, Args: []string{id}}
}

// wantEcho checks that rep is echo's reply to the call for id.
func wantEcho(rep driver.Reply, id string) error {
	got, ok := rep.Value.([]any)
	if !ok || len(got) != 2 || got[0] != id || got[1] != "k:"+id {
		return fmt.Errorf("call %s got reply %#v", id, rep.Value)
	}
	return nil
}

// questions returns a check whose questions echo id, in a known order.
func questions(id string, n int) *driver.Check {
	c := &driver.Check{Always: true}
	for i := range n {
		c.Questions = append(c.Questions, []string{"ECHO", fmt.Sprintf("%s/q%d", id, i)})
	}
	return c
}

// wantAnswers checks that rep holds the answers to questions(id, n), in order.
func wantAnswers(rep driver.Reply, id string, n int) error {
	if len(rep.Answers) != n {
		return fmt.Errorf("call %s: %d answers, want %d: %#v", id, len(rep.Answers), n, rep.Answers)
	}
	for i, a := range rep.Answers {
		if want := fmt.Sprintf("%s/q%d", id, i); a != want {
			return fmt.Errorf("call %s: answer %d is %#v, want %q", id, i, a, want)
		}
	}
	return nil
}

// newPipelined returns a driver closed with the test.
func newPipelined(t *testing.T, addr string, opts ...redigo.Option) *redigo.Redis {
	t.Helper()
	return newPool(t, addr, opts...)
}

// evalWithin runs call with a ctx that ends after d.
func evalWithin(p *redigo.Redis, d time.Duration, call driver.Call) (driver.Reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return p.Eval(ctx, call)
}

// way is how a test sends its calls: by Eval, or by Start and a wait for
// its done.
type way struct {
	name string
	eval func(p *redigo.Redis, ctx context.Context, call driver.Call) (driver.Reply, error)
}

// within runs call the test's way with a ctx that ends after d.
func (w way) within(p *redigo.Redis, d time.Duration, call driver.Call) (driver.Reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return w.eval(p, ctx, call)
}

// bothWays runs f with calls sent by Eval and by Start. Through Start, the
// test fails if done is not called by slack after the call's deadline, or
// is called more than once.
func bothWays(t *testing.T, f func(t *testing.T, w way)) {
	t.Run("Eval", func(t *testing.T) { f(t, way{"Eval", (*redigo.Redis).Eval}) })
	t.Run("Start", func(t *testing.T) {
		var started, finished atomic.Int64
		t.Cleanup(func() {
			assert.Equal(t, started.Load(), finished.Load(), "every Start's done called once")
		})
		f(t, way{"Start", func(p *redigo.Redis, ctx context.Context, call driver.Call) (driver.Reply, error) {
			type result struct {
				rep driver.Reply
				err error
			}
			got := make(chan result, 2) // room for a second call, which the cleanup reports
			started.Add(1)
			p.Start(ctx, call, driver.DoneFunc(func(rep driver.Reply, err error) {
				finished.Add(1)
				got <- result{rep, err}
			}))
			limit := longWait
			if dl, ok := ctx.Deadline(); ok {
				limit = time.Until(dl) + slack
			}
			select {
			case r := <-got:
				return r.rep, r.err
			case <-time.After(limit):
				t.Errorf("Start's done not called by %v after the deadline", slack)
				return driver.Reply{}, errors.New("no reply")
			}
		}})
	})
}

// clientsOf returns how many connections the server has from clients
// other than the one asking.
func clientsOf(t *testing.T, addr string) int {
	t.Helper()
	c, err := redis.Dial("tcp", addr, redis.DialReadTimeout(waitLimit))
	require.NoError(t, err)
	defer c.Close()
	list, err := redis.String(c.Do("CLIENT", "LIST"))
	require.NoError(t, err)
	return strings.Count(strings.TrimSpace(list), "\n") // one line per client, ours included
}

// eventually waits, bounded by waitLimit, until f holds.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", waitLimit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPipeline_ConcurrentEvals_EachGetsItsOwnReplyOnOneConnection(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		const goroutines, each = 64, 100
		srv := startRedis(t)
		p := newPipelined(t, srv.Addr())

		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := range goroutines {
			wg.Go(func() {
				for i := range each {
					id := fmt.Sprintf("%d.%d", g, i)
					call := echoCall(id)
					n := i % 3 // a third of the calls alone, the others with 1 or 2 questions ahead
					if n > 0 {
						check := questions(id, n)
						call.Check = func(string) *driver.Check { return check }
					}
					rep, err := w.within(p, waitLimit, call)
					if err == nil {
						err = wantEcho(rep, id)
					}
					if err == nil && n > 0 {
						err = wantAnswers(rep, id, n)
					}
					if err == nil && n == 0 && rep.Answers != nil {
						err = fmt.Errorf("call %s: answers without a check: %#v", id, rep.Answers)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		assert.EqualValues(t, 1, redigo.Dials(p), "every call shared one connection")
		assert.Equal(t, 1, clientsOf(t, srv.Addr()), "the server sees one connection from the driver")
	})
}

func TestPipeline_Conns_CallsTakeTheConnectionsInTurn(t *testing.T) {
	srv := startRedis(t)
	p := newPipelined(t, srv.Addr(), redigo.WithPipelineConns(3))
	for i := range 6 {
		id := fmt.Sprint(i)
		rep, err := evalWithin(p, waitLimit, echoCall(id))
		require.NoError(t, err)
		require.NoError(t, wantEcho(rep, id))
	}
	assert.EqualValues(t, 3, redigo.Dials(p))
	assert.Equal(t, 3, clientsOf(t, srv.Addr()))
}

// Each request ends at its own deadline: one that times out does not fail
// the others waiting on the same connection, which get their own replies
// when the master resumes; the connection is then replaced.
func TestPipeline_PausedMaster_EachRequestEndsAtItsOwnDeadline(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		srv := startRedis(t)
		p := newPipelined(t, srv.Addr(), redigo.WithReadTimeout(longWait), redigo.WithWriteTimeout(longWait))
		// Each call asks the server for its connection's ID, ahead of the
		// script on the same connection: where each call went.
		withID := func(id string) driver.Call {
			c := echoCall(id)
			c.Check = func(string) *driver.Check {
				return &driver.Check{Questions: [][]string{{"CLIENT", "ID"}}, Always: true}
			}
			return c
		}
		connOf := func(rep driver.Reply) any {
			require.Len(t, rep.Answers, 1)
			return rep.Answers[0]
		}
		warm, err := w.within(p, waitLimit, withID("warm"))
		require.NoError(t, err)
		first := connOf(warm)

		require.NoError(t, srv.Pause())
		defer srv.Resume()
		const short, long, resumeAt = 100 * time.Millisecond, 3 * time.Second, 400 * time.Millisecond
		type outcome struct {
			rep     driver.Reply
			err     error
			elapsed time.Duration
		}
		run := func(id string, d time.Duration) <-chan outcome {
			out := make(chan outcome, 1)
			go func() {
				begin := time.Now()
				rep, err := w.within(p, d, withID(id))
				out <- outcome{rep, err, time.Since(begin)}
			}()
			return out
		}
		a := run("a", short)
		time.Sleep(10 * time.Millisecond) // b's command goes out after a's
		b := run("b", long)

		ra := <-a
		require.Error(t, ra.err)
		assert.True(t, isTimeout(ra.err), "not a timeout: %v", ra.err)
		assert.GreaterOrEqual(t, ra.elapsed, short)
		assert.Less(t, ra.elapsed, short+slack, "a waited past its deadline")
		c := run("c", long) // after a timed out, while b still waits

		time.Sleep(resumeAt - short)
		require.NoError(t, srv.Resume())
		rb, rc := <-b, <-c
		require.NoError(t, rb.err, "b failed with a: its deadline had not passed")
		assert.NoError(t, wantEcho(rb.rep, "b"))
		assert.Equal(t, first, connOf(rb.rep), "b stayed on the connection it was sent on")
		require.NoError(t, rc.err)
		assert.NoError(t, wantEcho(rc.rep, "c"))
		assert.NotEqual(t, first, connOf(rc.rep), "c went on a new connection, not the one a timed out on")

		// The connection a timed out on is discarded once b is answered; the
		// old one is gone from the server.
		rep, err := w.within(p, waitLimit, withID("d"))
		require.NoError(t, err)
		assert.NoError(t, wantEcho(rep, "d"))
		assert.Equal(t, connOf(rc.rep), connOf(rep), "a replaced connection was reused")
		assert.EqualValues(t, 2, redigo.Dials(p))
		eventually(t, "the discarded connection closes", func() bool { return clientsOf(t, srv.Addr()) == 1 })
	})
}

func TestPipeline_PausedMaster_NewCallsEndAtTheirDeadlines(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		srv := startRedis(t)
		p := newPipelined(t, srv.Addr(), redigo.WithReadTimeout(longWait), redigo.WithWriteTimeout(longWait), redigo.WithDialTimeout(longWait))
		_, err := w.within(p, waitLimit, echoCall("warm"))
		require.NoError(t, err)
		require.NoError(t, srv.Pause())
		defer srv.Resume()
		for i := range 3 { // on the first connection, then on the ones that replace it
			elapsed, err := timed(func() error {
				_, err := w.within(p, shortWait, echoCall(fmt.Sprint(i)))
				return err
			})
			require.Error(t, err)
			assert.True(t, isTimeout(err), "not a timeout: %v", err)
			assert.Less(t, elapsed, shortWait+slack)
		}
	})
}

// Many callers keep calling while the master is stopped and resumed: no
// caller ever gets a reply that is not its own, the only errors are
// timeouts, calls succeed again after the resume, and what is left is one
// connection.
func TestPipeline_StoppedAndContinuedMaster_NoMismatchNoResidue(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		const goroutines, nodeTimeout = 32, 50 * time.Millisecond
		srv := startRedis(t)
		p := newPipelined(t, srv.Addr())
		_, err := w.within(p, waitLimit, echoCall("warm"))
		require.NoError(t, err)

		var (
			stop                      atomic.Bool
			resumed                   atomic.Bool
			okBefore, okAfter, failed atomic.Int64
			wg                        sync.WaitGroup
		)
		errs := make(chan error, goroutines)
		for g := range goroutines {
			wg.Go(func() {
				for i := 0; i < 100000 && !stop.Load(); i++ { // bounded in count; stop bounds it in time
					id := fmt.Sprintf("%d.%d", g, i)
					after := resumed.Load()
					rep, err := w.within(p, nodeTimeout, driver.Call{Script: setEcho, Keys: []string{"k:" + id}, Args: []string{id}})
					switch {
					case err == nil && rep.Value != id:
						errs <- fmt.Errorf("call %s got %#v", id, rep.Value)
						return
					case err == nil && after:
						okAfter.Add(1)
					case err == nil:
						okBefore.Add(1)
					case !isTimeout(err):
						errs <- fmt.Errorf("call %s: not a timeout: %v", id, err)
						return
					default:
						failed.Add(1)
					}
				}
			})
		}
		time.Sleep(200 * time.Millisecond)
		require.NoError(t, srv.Pause())
		time.Sleep(300 * time.Millisecond) // six node timeouts: every caller times out, some more than once
		require.NoError(t, srv.Resume())
		resumed.Store(true)
		time.Sleep(300 * time.Millisecond)
		stop.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		t.Logf("before the stop %d, timed out %d, after the resume %d; %d connections opened", okBefore.Load(), failed.Load(), okAfter.Load(), redigo.Dials(p))
		assert.Positive(t, okBefore.Load())
		assert.Positive(t, failed.Load(), "the stop timed nothing out")
		assert.Positive(t, okAfter.Load(), "no call succeeded after the resume")

		// Residue: every key the master holds is one whose call went out, with
		// that call's value; and one connection is left.
		c, err := redis.Dial("tcp", srv.Addr(), redis.DialReadTimeout(waitLimit))
		require.NoError(t, err)
		defer c.Close()
		keys, err := redis.Strings(c.Do("KEYS", "k:*"))
		require.NoError(t, err)
		for _, k := range keys {
			v, err := redis.String(c.Do("GET", k))
			require.NoError(t, err)
			assert.Equal(t, strings.TrimPrefix(k, "k:"), v, "key %s", k)
		}
		c.Close()
		eventually(t, "the driver is down to one connection", func() bool { return clientsOf(t, srv.Addr()) == 1 })
		rep, err := w.within(p, waitLimit, echoCall("last"))
		require.NoError(t, err)
		assert.NoError(t, wantEcho(rep, "last"))
	})
}

// connectionsReceived returns how many connections the server has accepted
// since it started, the one asking included.
func connectionsReceived(t *testing.T, addr string) int {
	t.Helper()
	c, err := redis.Dial("tcp", addr, redis.DialReadTimeout(waitLimit))
	require.NoError(t, err)
	defer c.Close()
	info, err := redis.String(c.Do("INFO", "stats"))
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_connections_received:"); ok {
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("INFO stats has no total_connections_received")
	return 0
}

// A master stopped for 2 s while 16 goroutines keep calling with a 50 ms
// deadline: the silent connection keeps taking their calls, and it is
// replaced by one dial at a time, spaced by a growing backoff, not at every
// deadline. The connections the server accepts, those it had queued while
// stopped included, are counted once it runs again.
func TestPipeline_StoppedMaster_DialsSpacedOut(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		const goroutines, nodeTimeout, stopped = 16, 50 * time.Millisecond, 2 * time.Second
		srv := startRedis(t)
		p := newPipelined(t, srv.Addr())
		_, err := w.within(p, waitLimit, echoCall("warm"))
		require.NoError(t, err)
		before := connectionsReceived(t, srv.Addr())

		var stop atomic.Bool
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := 0; i < 100000 && !stop.Load(); i++ { // bounded in count; stop bounds it in time
					w.within(p, nodeTimeout, echoCall(fmt.Sprintf("%d.%d", g, i)))
				}
			})
		}
		require.NoError(t, srv.Pause())
		time.Sleep(stopped)
		stop.Store(true)
		wg.Wait()
		require.NoError(t, srv.Resume())
		_, err = w.within(p, waitLimit, echoCall("after"))
		require.NoError(t, err, "calls succeed again after the resume")
		opened := connectionsReceived(t, srv.Addr()) - before - 1 // less the one asking
		t.Logf("%d connections opened over a %v stop", opened, stopped)
		assert.LessOrEqual(t, opened, 3, "a stopped master was dialled in a storm")
	})
}

// A cancelled Eval stops waiting at once, keeps its place in line, and
// leaves the connection in use: the next call on it gets its own reply, not
// the cancelled one's. A started call is bounded by its ctx's deadline only
// (see Redis.Start): a cancel does not cut it short, and it gets its own
// reply once the master answers.
func TestPipeline_Cancelled_KeepsItsPlaceAndTheConnection(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		srv := startRedis(t)
		p := newPipelined(t, srv.Addr(), redigo.WithReadTimeout(longWait))
		_, err := w.within(p, waitLimit, echoCall("warm"))
		require.NoError(t, err)
		require.NoError(t, srv.Pause())
		defer srv.Resume()

		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		got := make(chan error, 1)
		go func() {
			rep, err := w.eval(p, ctx, echoCall("cancelled"))
			if err == nil {
				err = wantEcho(rep, "cancelled")
			}
			got <- err
		}()
		time.Sleep(50 * time.Millisecond)
		cancel()
		if w.name == "Start" {
			select {
			case err := <-got:
				t.Fatalf("a started call ended on a cancel: %v", err)
			case <-time.After(100 * time.Millisecond):
			}
			require.NoError(t, srv.Resume())
			select {
			case err := <-got:
				require.NoError(t, err, "the started call gets its own reply")
			case <-time.After(slack):
				t.Fatal("the started call got no reply")
			}
			require.NoError(t, srv.Pause())
		} else {
			select {
			case err := <-got:
				assert.ErrorIs(t, err, context.Canceled)
			case <-time.After(slack):
				t.Fatal("a cancelled call kept waiting")
			}
		}

		next := make(chan error, 1)
		go func() {
			rep, err := w.within(p, waitLimit, echoCall("next"))
			if err == nil {
				err = wantEcho(rep, "next")
			}
			next <- err
		}()
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, srv.Resume())
		require.NoError(t, <-next)
		assert.EqualValues(t, 1, redigo.Dials(p), "the cancelled call's connection was replaced")
	})
}

func TestPipeline_NoScript_FallsBackToEvalOnTheSameConnection(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		srv := startRedis(t)
		p := newPipelined(t, srv.Addr())
		admin := newPool(t, srv.Addr())

		t.Run("alone", func(t *testing.T) {
			mustDo(t, admin, "SCRIPT", "FLUSH")
			check := questions("alone", 2)
			call := echoCall("alone")
			call.Check = func(string) *driver.Check { return check }
			rep, err := w.within(p, waitLimit, call)
			require.NoError(t, err)
			assert.NoError(t, wantEcho(rep, "alone"))
			assert.NoError(t, wantAnswers(rep, "alone", 2), "the answers of the EVALSHA that failed are kept")
			assert.EqualValues(t, 1, redigo.Dials(p))
		})
		t.Run("flushed while calls run", func(t *testing.T) {
			const goroutines, each = 16, 50
			var wg sync.WaitGroup
			errs := make(chan error, goroutines+1)
			for g := range goroutines {
				wg.Go(func() {
					for i := range each {
						id := fmt.Sprintf("%d.%d", g, i)
						rep, err := w.within(p, waitLimit, echoCall(id))
						if err == nil {
							err = wantEcho(rep, id)
						}
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Go(func() {
				for range 20 {
					if _, err := do(testCtx(t), admin, "SCRIPT", "FLUSH"); err != nil {
						errs <- err
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
			})
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			assert.EqualValues(t, 1, redigo.Dials(p))
		})
	})
}

// The check's questions go with the call only when due, and are answered
// in their order; the hint argument goes only when they do not. A
// connection is fresh until a call's answers on it have been handed on; a
// new connection is fresh again.
func TestPipeline_Check_AskedWhenDueAndAnsweredInOrder(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		srv := startRedis(t)
		p := newPipelined(t, srv.Addr())
		hinted := driver.NewScript("hinted", `return ARGV[#ARGV]`)
		hinted.TakesHint = true
		call := func(id string) driver.Call {
			return driver.Call{Script: hinted, Keys: []string{"k"}, Args: []string{id}, Check: func(server string) *driver.Check {
				c := questions(id, 5)
				c.Always, c.Hint = false, "hint-"+id
				return c
			}}
		}
		rep, err := w.within(p, waitLimit, call("first"))
		require.NoError(t, err)
		require.NoError(t, wantAnswers(rep, "first", 5), "a new connection: the questions go")
		assert.Equal(t, "", rep.Value, "no hint beside the questions")

		// The connection counts as checked once the first call's done has
		// returned, which may be just after the test has its reply: the next
		// call may still ask. Soon one goes without the questions.
		var id string
		for try := range 5 {
			id = fmt.Sprintf("second-%d", try)
			rep, err = w.within(p, waitLimit, call(id))
			require.NoError(t, err)
			if rep.Answers == nil {
				break
			}
			require.NoError(t, wantAnswers(rep, id, 5))
		}
		assert.Nil(t, rep.Answers, "same connection, answers taken: no questions")
		assert.Equal(t, "hint-"+id, rep.Value)

		_, err = srv.Do("CLIENT", "KILL", "TYPE", "normal")
		require.NoError(t, err)
		rep, err = w.within(p, waitLimit, call("third"))
		require.NoError(t, err)
		require.NoError(t, wantAnswers(rep, "third", 5), "a replaced connection is fresh: the questions go")
		assert.True(t, rep.Lost)
		assert.EqualValues(t, 2, redigo.Dials(p))
	})
}

// A connection whose answers did not reach the call's done (the call's
// deadline passed first) stays fresh: the next call asks again.
func TestPipeline_Check_UntakenAnswersLeaveTheConnectionFresh(t *testing.T) {
	srv := startRedis(t)
	p := newPipelined(t, srv.Addr())
	asked := func(id string) driver.Call {
		c := echoCall(id)
		check := questions(id, 1)
		check.Always = false
		c.Check = func(string) *driver.Check { return check }
		return c
	}
	_, err := evalWithin(p, waitLimit, echoCall("warm")) // the connection opens without questions
	require.NoError(t, err)
	require.NoError(t, srv.Pause())
	_, err = evalWithin(p, 50*time.Millisecond, asked("late"))
	require.NoError(t, srv.Resume())
	require.Error(t, err, "the call timed out on the paused master")
	rep, err := evalWithin(p, waitLimit, asked("next"))
	require.NoError(t, err)
	assert.NoError(t, wantAnswers(rep, "next", 1), "the late call's answers were never handed on")
}

func TestPipeline_MasterRestarted_ConnectionReplacedAndLost(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		srv := startRedis(t)
		p := newPipelined(t, srv.Addr())
		_, err := w.within(p, waitLimit, echoCall("before"))
		require.NoError(t, err)
		require.NoError(t, srv.Kill())
		require.NoError(t, srv.Restart(0))

		rep, err := w.within(p, waitLimit, echoCall("after"))
		require.NoError(t, err)
		assert.NoError(t, wantEcho(rep, "after"))
		assert.True(t, rep.Lost, "the dropped connection is reported")
		assert.EqualValues(t, 2, redigo.Dials(p))
	})
}

// A connection that drops while a call waits on it is replaced, and the
// call sent again within its deadline, on the new connection.
func TestPipeline_ConnectionDropsUnderACall_SentAgain(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		srv := startRedis(t)
		relay := redistest.NewForwarder(t, srv.Addr())
		p := newPipelined(t, relay.Addr())
		_, err := w.within(p, waitLimit, echoCall("warm"))
		require.NoError(t, err)
		require.NoError(t, srv.Pause())
		defer srv.Resume()
		got := make(chan error, 1)
		go func() {
			rep, err := w.within(p, waitLimit, echoCall("under"))
			if err == nil {
				err = wantEcho(rep, "under")
			}
			if err == nil && (!rep.Lost || redigo.Dials(p) != 2) {
				err = fmt.Errorf("Lost %v, Dials %d: the dropped connection is not reported", rep.Lost, redigo.Dials(p))
			}
			got <- err
		}()
		time.Sleep(50 * time.Millisecond) // the call waits on the paused master
		relay.Repoint(srv.Addr())         // the open connections are cut; new ones reach the same master
		time.Sleep(50 * time.Millisecond) // the call goes out again, and waits
		require.NoError(t, srv.Resume())
		require.NoError(t, <-got)
	})
}

func TestPipeline_Close_EndsWaitingCalls(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		srv := startRedis(t)
		p, err := redigo.New(srv.Addr(), redigo.WithReadTimeout(longWait))
		require.NoError(t, err)
		_, err = w.within(p, waitLimit, echoCall("warm"))
		require.NoError(t, err)
		require.NoError(t, srv.Pause())
		defer srv.Resume()

		got := make(chan error, 1)
		go func() {
			_, err := w.within(p, longWait, echoCall("waiting"))
			got <- err
		}()
		time.Sleep(50 * time.Millisecond)
		elapsed, _ := timed(p.Close)
		assert.Less(t, elapsed, slack)
		select {
		case err := <-got:
			require.Error(t, err)
			assert.Contains(t, err.Error(), "closed")
		case <-time.After(slack):
			t.Fatal("Close left a call waiting")
		}
		_, err = w.within(p, waitLimit, echoCall("after"))
		assert.Error(t, err, "Eval after Close")
	})
}

// Large arguments and replies cross more than one read and write buffer.
func TestPipeline_LargeValues(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		srv := startRedis(t)
		p := newPipelined(t, srv.Addr())
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Go(func() {
				id := strings.Repeat(fmt.Sprint(g), 200<<10+g)
				rep, err := w.within(p, waitLimit, echoCall(id))
				if err == nil {
					err = wantEcho(rep, id)
				}
				if err != nil {
					errs <- errors.New(err.Error()[:200])
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

func TestPipeline_ScriptError_IsTheError(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		srv := startRedis(t)
		p := newPipelined(t, srv.Addr())
		bad := driver.NewScript("bad", `return redis.error_reply("NOPE not today")`)
		_, err := w.within(p, waitLimit, driver.Call{Script: bad})
		var de driver.Error
		require.ErrorAs(t, err, &de)
		assert.Equal(t, "NOPE", de.Code())
		rep, err := w.within(p, waitLimit, echoCall("after"))
		require.NoError(t, err)
		assert.NoError(t, wantEcho(rep, "after"))
		assert.EqualValues(t, 1, redigo.Dials(p), "an error reply keeps the connection")
	})
}

func TestPipeline_TLSAndAuth(t *testing.T) {
	pki := newTestPKI(t, "good")
	tlsSrv := startTLSRedis(t, pki)
	auth := startRedisWithAuth(t, []any{"CONFIG", "SET", "requirepass", defaultPassword})
	for name, p := range map[string]*redigo.Redis{
		"TLS":  newPipelined(t, tlsSrv.TLSAddr(), redigo.WithTLS(pki.ClientTLS())),
		"AUTH": newPipelined(t, auth.Addr(), redigo.WithAuth("", defaultPassword), redigo.WithDB(3)),
	} {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for g := range 8 {
				wg.Go(func() {
					for i := range 20 {
						id := fmt.Sprintf("%d.%d", g, i)
						rep, err := evalWithin(p, waitLimit, echoCall(id))
						if err == nil {
							err = wantEcho(rep, id)
						}
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			assert.EqualValues(t, 1, redigo.Dials(p))
		})
	}
}

func TestPipeline_PausedTLSMaster_CallEndsAtItsDeadline(t *testing.T) {
	pki := newTestPKI(t, "good")
	srv := startTLSRedis(t, pki)
	p := newPipelined(t, srv.TLSAddr(), redigo.WithTLS(pki.ClientTLS()), redigo.WithReadTimeout(longWait), redigo.WithWriteTimeout(longWait))
	_, err := evalWithin(p, waitLimit, echoCall("warm"))
	require.NoError(t, err)
	require.NoError(t, srv.Pause())
	defer srv.Resume()
	elapsed, err := timed(func() error {
		_, err := evalWithin(p, shortWait, echoCall("paused"))
		return err
	})
	require.Error(t, err)
	assert.True(t, isTimeout(err), "not a timeout: %v", err)
	assert.Less(t, elapsed, shortWait+slack)
	require.NoError(t, srv.Resume())
	rep, err := evalWithin(p, waitLimit, echoCall("resumed"))
	require.NoError(t, err)
	assert.NoError(t, wantEcho(rep, "resumed"))
}

func TestDo_RepliesInTheNeutralForm_SharingEvalsConnection(t *testing.T) {
	srv := startRedis(t)
	p := newPool(t, srv.Addr())
	ctx := testCtx(t)
	key := "do"
	v, err := p.Do(ctx, "SET", key, "v", "NX", "PX", "60000")
	require.NoError(t, err)
	assert.Equal(t, "OK", v)
	v, err = p.Do(ctx, "SET", key, "w", "NX", "PX", "60000")
	require.NoError(t, err)
	assert.Nil(t, v, "NX on a held key")
	v, err = p.Do(ctx, "GET", key)
	require.NoError(t, err)
	assert.Equal(t, "v", v)
	v, err = p.Do(ctx, "INCR", key+":n")
	require.NoError(t, err)
	assert.Equal(t, int64(1), v)
	v, err = p.Do(ctx, "MGET", key, key+":none")
	require.NoError(t, err)
	assert.Equal(t, []any{"v", nil}, v)
	_, err = p.Do(ctx, "INCR", key)
	var de driver.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "ERR", de.Code())

	// Eval and Do share the connection.
	rep, err := evalWithin(p, waitLimit, echoCall("shared"))
	require.NoError(t, err)
	require.NoError(t, wantEcho(rep, "shared"))
	assert.EqualValues(t, 1, redigo.Dials(p))
}

// spin keeps the master busy for ARGV[1] microseconds, then returns ARGV[2].
var spin = driver.NewScript("spin", `
local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
repeat
  t = redis.call('TIME')
until t[1] * 1000000 + t[2] - start >= tonumber(ARGV[1])
return ARGV[2]`)

// A call that times out queued behind others, while the master answers
// them, leaves the connection in use: the master is busy, not hung.
func TestPipeline_TimedOutInQueueBehindAnsweredCalls_KeepsTheConnection(t *testing.T) {
	bothWays(t, func(t *testing.T, w way) {
		srv := startRedis(t)
		p := newPipelined(t, srv.Addr())
		_, err := w.within(p, waitLimit, driver.Call{Script: spin, Args: []string{"0", "warm"}})
		require.NoError(t, err)

		const busy, each = 8, 20 * time.Millisecond // the master answers one every 20 ms for 160 ms
		var wg sync.WaitGroup
		errs := make(chan error, busy)
		for i := range busy {
			wg.Go(func() {
				id := fmt.Sprint(i)
				rep, err := w.within(p, waitLimit, driver.Call{Script: spin, Args: []string{fmt.Sprint(each.Microseconds()), id}})
				if err == nil && rep.Value != id {
					err = fmt.Errorf("busy call %s got %#v", id, rep.Value)
				}
				errs <- err
			})
			time.Sleep(time.Millisecond) // in this order on the wire
		}
		_, err = w.within(p, 3*each, echoCall("queued")) // behind about 150 ms of work
		require.Error(t, err)
		require.True(t, isTimeout(err), "not a timeout: %v", err)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}

		rep, err := w.within(p, waitLimit, echoCall("after"))
		require.NoError(t, err)
		assert.NoError(t, wantEcho(rep, "after"), "the queued call's late reply was taken for another")
		assert.EqualValues(t, 1, redigo.Dials(p), "a master that kept answering had its connection replaced")
	})
}

// Calls started from a started call's done, on the connection's reader,
// go out once the reader has handed out the replies it holds, in chains
// as long as the callers like: none waits for a reply that never comes.
func TestPipeline_CallsStartedFromADone_GoOut(t *testing.T) {
	srv := startRedis(t)
	p := newPipelined(t, srv.Addr())
	_, err := p.Eval(context.Background(), echoCall("warm")) // the connection is open: Start sends on it
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	const chains, links = 8, 20
	done := make(chan error, chains)
	for c := range chains {
		var next func(n int)
		next = func(n int) {
			id := fmt.Sprintf("chain %d link %d", c, n)
			p.Start(ctx, echoCall(id), driver.DoneFunc(func(rep driver.Reply, err error) {
				if err == nil {
					err = wantEcho(rep, id)
				}
				if err != nil || n == links {
					done <- err
					return
				}
				next(n + 1) // on the reader, mostly
			}))
		}
		next(1)
	}
	for range chains {
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(slack):
			t.Fatal("a chain of started calls stalled")
		}
	}
}
