package redistest_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

func TestStart_PasswordProtectedServerCountsAsUp(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral, "--requirepass", "s3cret")
	c, err := net.DialTimeout("tcp", srv[0].Addr(), time.Second)
	require.NoError(t, err)
	c.Close()
}

func TestListAt_ReadsFlatArrays(t *testing.T) {
	s := redistest.Start(t, 1, redistest.Ephemeral)[0]
	for _, k := range []string{"a", "b"} {
		_, err := s.Do("SET", k, "v-"+k)
		require.NoError(t, err)
	}
	keys, err := redistest.ListAt(s.Addr(), "KEYS", "*")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "b"}, keys)
	vals, err := redistest.ListAt(s.Addr(), "MGET", "a", "missing", "b")
	require.NoError(t, err)
	assert.Equal(t, []string{"v-a", "", "v-b"}, vals, "a nil element is empty")
	empty, err := redistest.ListAt(s.Addr(), "KEYS", "none*")
	require.NoError(t, err)
	assert.Empty(t, empty)
	_, err = redistest.ListAt(s.Addr(), "GET", "a")
	assert.ErrorContains(t, err, "no array")
	_, err = redistest.ListAt(s.Addr(), "NOSUCHCOMMAND")
	assert.ErrorContains(t, err, "unknown command")
}

func TestServer_KillAndRestart(t *testing.T) {
	s := redistest.Start(t, 1, redistest.Ephemeral)[0]
	pid := s.PID()
	require.NotZero(t, pid)
	require.NoError(t, s.Kill())
	assert.Zero(t, s.PID())
	_, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
	assert.Error(t, err, "nothing listens after a kill")
	require.NoError(t, s.Restart(redistest.Ephemeral))
	assert.NotEqual(t, pid, s.PID())
}

func TestServer_Uptime(t *testing.T) {
	s := redistest.Start(t, 1, redistest.Ephemeral)[0]
	up, err := s.Uptime()
	require.NoError(t, err)
	assert.LessOrEqual(t, up, 2, "a server just started")
	time.Sleep(2100 * time.Millisecond)
	later, err := s.Uptime()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, later, up+2)
	require.NoError(t, s.Kill())
	_, err = s.Uptime()
	assert.Error(t, err, "a killed server has no uptime")
}

func TestReplica_FollowsThenLagsOncePromoted(t *testing.T) {
	m := redistest.Start(t, 1, redistest.Ephemeral)[0]
	r := redistest.StartReplica(t, m)
	_, err := m.Do("SET", "before", "v")
	require.NoError(t, err)
	require.NoError(t, redistest.WaitReplicated(m, r, 5*time.Second))
	v, err := r.Do("GET", "before")
	require.NoError(t, err)
	assert.Equal(t, "v", v)

	require.NoError(t, r.Promote())
	_, err = m.Do("SET", "after", "v")
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond)
	_, err = r.Do("GET", "after")
	assert.ErrorIs(t, err, redistest.ErrNil, "a promoted replica no longer follows")
	f, err := r.Info("replication")
	require.NoError(t, err)
	assert.Equal(t, "master", f["role"])
	m0, err := m.Info("replication")
	require.NoError(t, err)
	assert.Equal(t, m0["master_replid"], f["master_replid2"], "it keeps its old master's history as master_replid2")
}

func TestForwarder_RepointClosesOpenConnections(t *testing.T) {
	srv := redistest.Start(t, 2, redistest.Ephemeral)
	_, err := srv[1].Do("SET", "where", "second")
	require.NoError(t, err)
	f := redistest.NewForwarder(t, srv[0].Addr())
	c, err := net.DialTimeout("tcp", f.Addr(), time.Second)
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	_, err = c.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", string(buf[:n]))

	f.Repoint(srv[1].Addr())
	_, err = c.Read(buf)
	assert.Error(t, err, "the open connection is closed")
	v, err := redistest.DoAt(f.Addr(), "GET", "where")
	require.NoError(t, err)
	assert.Equal(t, "second", v, "a new connection reaches the new target")
}

func TestHoldBack_ARequestGivenUpOnStillArrives(t *testing.T) {
	s := redistest.Start(t, 1, redistest.Ephemeral)[0]
	h := redistest.NewHoldBack(t, s.Addr())
	require.Error(t, h.Deliver(time.Second), "nothing is held back yet")
	h.Hold([]byte("late-value"))

	c, err := net.DialTimeout("tcp", h.Addr(), time.Second)
	require.NoError(t, err)
	_, err = c.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nlate-value\r\n"))
	require.NoError(t, err)
	select {
	case <-h.Held():
	case <-time.After(2 * time.Second):
		t.Fatal("the request was not held back")
	}
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	_, err = c.Read(make([]byte, 16))
	require.Error(t, err, "no answer while it is held back")
	c.Close() // the client gives up

	v, err := redistest.DoAt(h.Addr(), "SET", "other", "v")
	require.NoError(t, err, "other connections pass")
	assert.Equal(t, "OK", v)
	_, err = s.Do("GET", "k")
	require.ErrorIs(t, err, redistest.ErrNil, "not arrived yet")

	require.NoError(t, h.Deliver(2*time.Second))
	v, err = s.Do("GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "late-value", v, "the request given up on ran once delivered")
}

// A killed server's forked children die with it: an RDB save or an AOF
// rewrite still writing into the server's directory would keep the test's
// cleanup from removing it ("directory not empty").
func TestServer_KillEndsTheChildrenItForked(t *testing.T) {
	s := redistest.Start(t, 1, redistest.Ephemeral)[0]
	_, err := s.Do("EVAL", "for i = 1, 2000 do redis.call('SET', 'k' .. i, 'v') end return 1", "0")
	require.NoError(t, err)
	_, err = s.Do("CONFIG", "SET", "rdb-key-save-delay", "2000") // 2 ms a key: the save takes 4 s
	require.NoError(t, err)
	_, err = s.Do("BGSAVE")
	require.NoError(t, err)
	var child int
	require.Eventually(t, func() bool {
		child = childOf(s.PID())
		return child != 0
	}, 2*time.Second, 10*time.Millisecond, "the save's child runs")
	require.NoError(t, s.Kill())
	assert.False(t, runs(child), "the save's child %d still runs after Kill", child)
}

// childOf returns a running child of process pid, or 0, from /proc.
func childOf(pid int) int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		if p, ppid, state, ok := stat(f); ok && ppid == pid && state != "Z" {
			return p
		}
	}
	return 0
}

// runs reports whether process pid runs: it exists, and is no zombie.
func runs(pid int) bool {
	p, _, state, ok := stat(fmt.Sprintf("/proc/%d/stat", pid))
	return ok && p == pid && state != "Z"
}

// stat reads a process's pid, parent and state from its /proc stat file.
func stat(file string) (pid, ppid int, state string, ok bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, "", false
	}
	i := bytes.LastIndexByte(b, ')') // comm may hold spaces and parentheses
	if _, err := fmt.Sscan(string(b[:bytes.IndexByte(b, ' ')]), &pid); err != nil || i < 0 {
		return 0, 0, "", false
	}
	_, err = fmt.Sscan(string(b[i+1:]), &state, &ppid)
	return pid, ppid, state, err == nil
}
