package goredis_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/goredis"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

var echo = driver.NewScript("echo", `return ARGV[1]`)

// echoCall runs echo with v within d.
func echoCall(m driver.Master, d time.Duration, v string) (driver.Reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return driver.Eval(ctx, m, driver.Call{Script: echo, Keys: []string{"k"}, Args: []string{v}})
}

// concurrently runs n calls of do at once and waits for them.
func concurrently(n int, do func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { do(i) })
	}
	wg.Wait()
}

// pause stops srv until the test ends or resume is called.
func pause(t *testing.T, srv *redistest.Server) (resume func()) {
	require.NoError(t, srv.Pause())
	var once sync.Once
	resume = func() { once.Do(func() { require.NoError(t, srv.Resume()) }) }
	t.Cleanup(resume)
	return resume
}

// Calls queued together on a master that stopped answering each return at
// their own deadline, though their batch is still out: none waits for the
// batch to time out on the client's terms (the deadline plus a second, or
// the client's ReadTimeout).
func TestBatch_StuckBatch_EachCallKeepsItsDeadline(t *testing.T) {
	for _, mode := range clientModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := redistest.Start(t, 1, redistest.Ephemeral)
			m := wrap(t, srv[0].Addr(), mode.opt)
			_, err := echoCall(m, 2*time.Second, "warm")
			require.NoError(t, err)

			resume := pause(t, srv[0])
			took := make([]time.Duration, 8)
			errs := make([]error, 8)
			concurrently(8, func(i int) {
				d := time.Duration(50*(i+1)) * time.Millisecond
				start := time.Now()
				_, errs[i] = echoCall(m, d, "x")
				took[i] = time.Since(start) - d
			})
			for i := range took {
				assert.ErrorIs(t, errs[i], context.DeadlineExceeded, "call %d", i)
				assert.Less(t, took[i], 150*time.Millisecond, "call %d returned that long after its deadline", i)
			}
			resume()
			rep, err := echoCall(m, 5*time.Second, "after")
			require.NoError(t, err)
			assert.Equal(t, "after", rep.Value)
		})
	}
}

// A batch whose replies never came in time loses its connection: the
// replies the master sends on it once resumed are never read as those of
// later calls, which each get their own.
func TestBatch_TimedOutBatch_NoReplyReachesAnotherCall(t *testing.T) {
	for _, mode := range []struct {
		name string
		opt  redis.Options
		out  time.Duration // how long a stuck batch of 100 ms calls takes to time out
	}{
		{"ctx deadlines", redis.Options{ContextTimeoutEnabled: true}, 100*time.Millisecond + time.Second},
		{"client timeouts", redis.Options{ReadTimeout: 300 * time.Millisecond}, 300 * time.Millisecond},
	} {
		t.Run(mode.name, func(t *testing.T) {
			srv := redistest.Start(t, 1, redistest.Ephemeral)
			m := wrap(t, srv[0].Addr(), mode.opt)
			concurrently(8, func(i int) {
				_, err := echoCall(m, 2*time.Second, "warm")
				assert.NoError(t, err)
			})

			resume := pause(t, srv[0])
			concurrently(8, func(i int) {
				_, err := echoCall(m, 100*time.Millisecond, "late"+strconv.Itoa(i))
				assert.Error(t, err)
			})
			time.Sleep(mode.out + 200*time.Millisecond) // the batches time out
			resume()

			for round := range 3 {
				concurrently(16, func(i int) {
					want := fmt.Sprintf("now%d.%d", round, i)
					rep, err := echoCall(m, 5*time.Second, want)
					if assert.NoError(t, err, want) {
						assert.Equal(t, want, rep.Value, "a call got another call's reply")
					}
				})
			}
		})
	}
}

// Busy callers of a master that hangs get at most one new connection at a
// time: each lane stuck behind the hung master stops taking calls, but the
// next one is opened only once the one opened before it has had its first
// batch back (or failed), not for each caller that finds no lane.
func TestBatch_HungMaster_NoDialStorm(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	client := redis.NewClient(&redis.Options{Addr: srv[0].Addr(), ContextTimeoutEnabled: true, PoolSize: 64})
	t.Cleanup(func() { client.Close() })
	m, err := goredis.New(client)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	concurrently(16, func(i int) {
		_, err := echoCall(m, 2*time.Second, "warm")
		assert.NoError(t, err)
	})
	accepted := func() int {
		info, err := srv[0].Info("stats")
		require.NoError(t, err)
		n, err := strconv.Atoi(info["total_connections_received"])
		require.NoError(t, err)
		return n
	}
	before := accepted()
	misses := client.PoolStats().Misses

	resume := pause(t, srv[0])
	end := time.Now().Add(2 * time.Second)
	concurrently(16, func(i int) {
		for range 200 {
			if time.Now().After(end) {
				return
			}
			echoCall(m, 50*time.Millisecond, "x")
		}
	})
	resume()
	time.Sleep(1500 * time.Millisecond) // the stuck batches end; the server accepts what waited
	opened := accepted() - before - 1   // the INFO's own connection
	dialled := client.PoolStats().Misses - misses
	t.Logf("connections: %d accepted by the server, %d dialled by the client", opened, dialled)
	assert.LessOrEqual(t, opened, 3, "connections opened to the hung master")
	assert.LessOrEqual(t, dialled, uint32(3), "connections the client dialled")
}

// A new connection's calls may all reach their deadlines before its first
// batch goes out (a busy machine leaves its sender unscheduled): the unused
// connection is dropped, and the next call opens another rather than wait
// for a first batch that will never come.
func TestBatch_NewLaneAbandonedBeforeItsFirstBatch_DoesNotBlockTheNext(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	client := redis.NewClient(&redis.Options{Addr: srv[0].Addr(), Protocol: 2})
	t.Cleanup(func() { client.Close() })
	for try := range 100 {
		m, err := goredis.New(client)
		require.NoError(t, err)
		concurrently(8, func(i int) { echoCall(m, time.Duration(i+1)*20*time.Microsecond, "x") })
		rep, err := echoCall(m, time.Second, "next")
		if !assert.NoError(t, err, "try %d", try) {
			m.Close()
			break
		}
		assert.Equal(t, "next", rep.Value)
		require.NoError(t, m.Close())
	}
}

// Calls in one batch that ask the same questions share one set of
// answers, asked once at the head of the batch, on their connection.
func TestBatch_SameQuestions_AskedOncePerBatch(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m := wrap(t, srv[0].Addr(), redis.Options{ContextTimeoutEnabled: true})
	_, err := echoCall(m, 2*time.Second, "warm")
	require.NoError(t, err)
	asked := func() int {
		info, err := srv[0].Info("commandstats")
		require.NoError(t, err)
		calls, _, _ := strings.Cut(strings.TrimPrefix(info["cmdstat_client|id"], "calls="), ",")
		n, _ := strconv.Atoi(calls)
		return n
	}

	// The calls queue while the master is stopped, and go out together.
	resume := pause(t, srv[0])
	reps := make([]driver.Reply, 8)
	errs := make([]error, 8)
	go func() { time.Sleep(200 * time.Millisecond); resume() }()
	concurrently(8, func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		reps[i], errs[i] = driver.Eval(ctx, m, driver.Call{Script: echo, Keys: []string{"k"}, Args: []string{strconv.Itoa(i)},
			Check: func(string) *driver.Check {
				return &driver.Check{Questions: [][]string{{"CLIENT", "ID"}}, Always: true}
			}})
	})
	for i := range reps {
		require.NoError(t, errs[i])
		assert.Equal(t, strconv.Itoa(i), reps[i].Value)
		require.Len(t, reps[i].Answers, 1)
		assert.IsType(t, int64(0), reps[i].Answers[0])
	}
	assert.Less(t, asked(), 8, "the questions went once per batch, not once per call")
}
