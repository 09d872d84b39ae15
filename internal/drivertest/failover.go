package drivertest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// NewSentinel makes the driver under test over a client that follows the
// master set name through the Sentinel at sentinel ("host:port"). The suite
// closes it.
type NewSentinel func(t testing.TB, sentinel, name string) driver.Master

// RunSentinelFailover checks a driver over a Sentinel client through a
// failover: its calls reach the master the Sentinel names, a script that
// writes included, and the first call on a server is asked the guard's
// questions; the lock is granted once the master has been up for the
// guard's window. When the replica is promoted, calls follow the client to
// it (those still on the old master, a replica now, answer READONLY or
// fail), the first call it runs is asked, and it abstains for the window.
func RunSentinelFailover(t *testing.T, newDriver NewSentinel) {
	master := redistest.Start(t, 1, redistest.Ephemeral)[0]
	replica := redistest.StartReplica(t, master)
	sentinel := redistest.StartSentinel(t, master, "locks")
	m := closed(t, newDriver(t, sentinel, "locks"))

	// The driver's view: the script names the server that ran it, and the
	// first call to reach a server is asked.
	where := driver.NewScript("where", `redis.call('SET', KEYS[1], 'w'); return string.match(redis.call('INFO', 'server'), 'tcp_port:(%d+)')`)
	call := func(t *testing.T) (ran, answered string, err error) {
		rep, err := eval(t, m, ctxFor(t, time.Second), driver.Call{Script: where, Keys: []string{"k"},
			Check: func(server string) *driver.Check {
				assert.Equal(t, "", server, "a Sentinel client is one master")
				return &driver.Check{Questions: [][]string{{"INFO", "server"}}}
			}})
		if err != nil {
			return "", "", err
		}
		if rep.Answers != nil {
			answered = answeredBy(t, rep.Answers)
		}
		ran, _ = rep.Value.(string)
		return ran, answered, nil
	}
	ran, answered, err := call(t)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(master.Port), ran)
	require.Equal(t, ran, answered, "the first call is asked")

	// The lock's view: once the master has been up for the guard's window,
	// a lock is granted.
	const window = time.Second
	// The lock has a Master of its own: the direct calls above and below
	// take their answers themselves, and a connection is asked until its
	// answers are taken (see driver.Master.Start).
	c, err := redlock.New([]driver.Master{newDriver(t, sentinel, "locks")}, redlock.WithCloseDrivers(), redlock.WithRestartGuard(window),
		redlock.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	for try := 0; ; try++ {
		l, err := c.TryLock(ctx, "before", 10*time.Second)
		if err == nil {
			require.NoError(t, l.Release(ctx))
			break
		}
		require.Less(t, try, 40, "no lock within the guard's window: %v", err)
		time.Sleep(100 * time.Millisecond)
	}

	redistest.Failover(t, sentinel, "locks")
	// Until the driver follows, calls reach the old master (a replica
	// soon) or fail. The first call the promoted replica runs is asked.
	deadline := time.Now().Add(20 * time.Second)
	for ran != strconv.Itoa(replica.Port) {
		require.True(t, time.Now().Before(deadline), "the driver did not follow the failover within 20s (last: %s, %v)", ran, err)
		time.Sleep(50 * time.Millisecond)
		if ran, answered, err = call(t); err != nil {
			continue
		}
		if ran == strconv.Itoa(replica.Port) {
			assert.Equal(t, ran, answered, "the first call to the promoted replica was asked")
		}
	}
	// The promoted replica is kept from voting for the window. Until the
	// lock's Master follows the failover too, its calls fail on the old
	// master; none is granted.
	for try := 0; ; try++ {
		_, err = c.TryLock(ctx, "after", 10*time.Second)
		require.Error(t, err, "granted in the promoted replica's window")
		if errors.Is(err, redlock.ErrQuarantined) || try == 200 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.ErrorIs(t, err, redlock.ErrQuarantined, "%v", err)
	var ae *redlock.AttemptError
	require.ErrorAs(t, err, &ae)
	require.Len(t, ae.Masters, 1)
	assert.Equal(t, redlock.MasterAbstained, ae.Masters[0].Answer)
	assert.Contains(t, ae.Masters[0].Why, "promoted from a replica", "%s", ae.Detail())
}
