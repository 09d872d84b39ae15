package drivertest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// A stopped master under a busy client: the sizes of the case.
const (
	stormWorkers = 16                      // goroutines calling every master in turn
	stormTimeout = 50 * time.Millisecond   // each call's deadline: the lock's default node timeout
	stormStop    = 2 * time.Second         // how long the master is stopped
	stormLimit   = 3                       // the most connections the client may open to it meanwhile
	stormBack    = 1500 * time.Millisecond // by when, after SIGCONT, its calls succeed again
	stormBound   = 30 * time.Second        // bounds the whole case
)

// callCounts counts a worker pool's calls per master.
type callCounts struct {
	ok, failed [3]atomic.Int64
}

func (c *callCounts) oks() [3]int64 {
	var out [3]int64
	for i := range out {
		out[i] = c.ok[i].Load()
	}
	return out
}

// stoppedMasterIsNotStormed: one client (a driver per master) of
// stormWorkers busy goroutines calls three masters; one is SIGSTOPped for
// stormStop. A master that answers nothing must not get a new connection
// at every call's deadline: over the stop, the client opens at most
// stormLimit connections to it, counted by the master itself once it runs
// again (it accepts those queued meanwhile first). The other masters keep
// answering throughout, and the stopped one serves calls again within
// stormBack of SIGCONT.
func stoppedMasterIsNotStormed(t *testing.T, newDriver New) {
	srv, ds := open(t, 3, newDriver)
	s := driver.NewScript("one", `return 1`)
	warm(t, ds)
	var counts callCounts
	stop := make(chan struct{})
	var wg sync.WaitGroup
	end := time.Now().Add(stormBound)
	for range stormWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 1_000_000 && time.Now().Before(end); n++ {
				select {
				case <-stop:
					return
				default:
				}
				for i, d := range ds {
					ctx, cancel := context.WithTimeout(context.Background(), stormTimeout)
					_, err := d.Eval(ctx, driver.Call{Script: s, Keys: []string{"k"}})
					cancel()
					if err == nil {
						counts.ok[i].Add(1)
					} else {
						counts.failed[i].Add(1)
					}
				}
				time.Sleep(time.Millisecond) // busy, not spinning
			}
		}()
	}
	stopped := false
	defer func() {
		if stopped {
			srv[0].Resume()
		}
		close(stop)
		wg.Wait()
	}()

	// Every master answers before the stop.
	require.Eventually(t, func() bool {
		o := counts.oks()
		return o[0] > 50 && o[1] > 50 && o[2] > 50
	}, 5*time.Second, 10*time.Millisecond, "the masters answer before the stop")
	before := connectionsReceived(t, srv[0])

	require.NoError(t, srv[0].Pause())
	stopped = true
	atStop := counts.oks()
	time.Sleep(stormStop)
	atResume := counts.oks()
	require.NoError(t, srv[0].Resume())
	stopped = false
	resumed := time.Now()
	after := connectionsReceived(t, srv[0])

	// Calls to the stopped master succeed again.
	var back time.Duration
	for try := 0; try < 400 && time.Since(resumed) < 2*stormBack; try++ {
		if counts.ok[0].Load() > atResume[0] {
			back = time.Since(resumed)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}

	opened := after - before - 1 // the second INFO's own connection
	t.Logf("stopped %v: %d connections opened to the stopped master; calls to it succeeded again %v after SIGCONT; calls during the stop: %d/%d/%d answered, %d/%d/%d failed",
		stormStop, opened, back, atResume[0]-atStop[0], atResume[1]-atStop[1], atResume[2]-atStop[2],
		counts.failed[0].Load(), counts.failed[1].Load(), counts.failed[2].Load())
	assert.LessOrEqual(t, opened, int64(stormLimit), "connections opened to the master while it was stopped")
	for i := 1; i < 3; i++ {
		assert.Greater(t, atResume[i]-atStop[i], int64(100), "calls to master %d kept succeeding during the stop", i)
	}
	assert.NotZero(t, back, "no call to the master succeeded within %v of SIGCONT", 2*stormBack)
	assert.LessOrEqual(t, back, stormBack, "calls to the master succeed again soon after SIGCONT")
}

// warm makes stormWorkers calls at once to each master, each held for a
// moment by the master, so that a driver that keeps a connection per call
// in flight (a pool) has as many as the workers will use: a client that
// has run for a while has them, and the case counts the connections a stop
// makes it open, not those that busy callers would have opened anyway.
func warm(t *testing.T, ds []driver.Master) {
	t.Helper()
	busy := driver.NewScript("busy", `local i = 0 while i < 100000 do i = i + 1 end return i`)
	start := make(chan struct{})
	errs := make(chan error, stormWorkers*len(ds))
	var wg sync.WaitGroup
	for range stormWorkers {
		for _, d := range ds {
			wg.Go(func() {
				<-start
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := d.Eval(ctx, driver.Call{Script: busy, Keys: []string{"k"}})
				errs <- err
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "warming up")
	}
}

// connectionsReceived returns the server's count of connections it has
// accepted, this question's own included. It tries a few times: a server
// that has just met a storm of queued connections may have had its accept
// queue full, and dropped this one's first attempts.
func connectionsReceived(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	var info map[string]string
	var err error
	for try := 0; try < 5; try++ {
		if info, err = s.Info("stats"); err == nil {
			break
		}
	}
	require.NoError(t, err)
	n, err := strconv.ParseInt(info["total_connections_received"], 10, 64)
	require.NoError(t, err)
	return n
}
