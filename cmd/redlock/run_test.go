package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// Freshly started servers have no uptime: the tests that are not about the
// restart guard turn it off. Node timeouts are generous because this box is
// shared and the binary may carry the race detector.
func runArgs(nodes, key string, extra ...string) []string {
	return append([]string{"run", "--nodes", nodes, "--restart-guard", "0", "--node-timeout", "500ms", "--key", key}, extra...)
}

// helper returns the environment and argv that make the test binary the
// command under the lock.
func helper(t *testing.T, mode, dir string, env ...string) ([]string, []string) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	return append([]string{helperEnv + "=" + mode, helperDir + "=" + dir}, env...), []string{"--", self}
}

// holdKey takes key with a client of the test's own and returns it held.
func holdKey(t *testing.T, addrs []string, key string) *redlock.Lock {
	t.Helper()
	c, err := redlock.NewFromAddrs(addrs, redlock.WithRestartGuard(0), redlock.WithNodeTimeout(500*time.Millisecond),
		redlock.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := c.Lock(ctx, key, 30*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { l.Release(context.Background()) })
	// Lock returns at a quorum: the last grants land a moment later.
	waitFor(t, 5*time.Second, "every master to hold "+key, func() bool {
		st, err := c.Inspect(ctx, key)
		if err != nil {
			return false
		}
		for _, n := range st.Nodes {
			if n.Holder != l.Token() {
				return false
			}
		}
		return true
	})
	return l
}

func TestRun_LockDeletedFromEveryNode_CommandGetsSIGTERM(t *testing.T) {
	servers, nodes := masters(t, 3)
	dir := t.TempDir()
	env, argv := helper(t, "hold", dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := bin.command(ctx, env, append(runArgs(nodes, "job", "--ttl", "5s", "--grace", "30s"), argv...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())

	ready := filepath.Join(dir, "ready")
	// The helper creates the file, then writes its line: wait for the line.
	waitFor(t, 30*time.Second, "the command to start under the lock", func() bool {
		b, err := os.ReadFile(ready)
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	env2, err := os.ReadFile(ready)
	require.NoError(t, err)
	key, fence, _ := strings.Cut(strings.TrimSpace(string(env2)), " ")
	assert.Equal(t, "job", key, "REDLOCK_KEY")
	n, err := strconv.ParseInt(fence, 10, 64)
	assert.NoError(t, err, "REDLOCK_FENCE %q", fence)
	assert.Positive(t, n, "REDLOCK_FENCE")

	for _, s := range servers {
		conn, err := redis.Dial("tcp", s.Addr())
		require.NoError(t, err)
		_, err = conn.Do("DEL", "job")
		conn.Close()
		require.NoError(t, err)
	}

	r := finish(t, cmd.Wait(), &stdout, &stderr)
	assert.Equal(t, exitLost, r.code, "%v", r)
	got, err := os.ReadFile(filepath.Join(dir, "signal"))
	require.NoError(t, err, "the command recorded no signal\n%v", r)
	assert.Equal(t, syscall.SIGTERM.String(), string(got))
	assert.Contains(t, r.stderr, `lock "job" (fence `+fence+`) lost`)
}

func TestRun_TwoAtOnce_NeverOverlap(t *testing.T) {
	_, nodes := masters(t, 3)
	dir := t.TempDir()
	env, argv := helper(t, "interval", dir, helperSleep+"=150ms")
	const runsEach = 3
	results := make(chan result, 2*runsEach)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range runsEach {
				results <- bin.run(t, env, append(runArgs(nodes, "shared", "--ttl", "5s", "--wait", "45s"), argv...)...)
			}
		})
	}
	wg.Wait()
	close(results)
	for r := range results {
		require.Equal(t, 0, r.code, "%v", r)
	}

	raw, err := os.ReadFile(filepath.Join(dir, "intervals"))
	require.NoError(t, err)
	type interval struct{ start, end, fence int64 }
	var got []interval
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var iv interval
		f := strings.Fields(line)
		require.Len(t, f, 3, "line %q", line)
		iv.start, _ = strconv.ParseInt(f[0], 10, 64)
		iv.end, _ = strconv.ParseInt(f[1], 10, 64)
		iv.fence, _ = strconv.ParseInt(f[2], 10, 64)
		got = append(got, iv)
	}
	require.Len(t, got, 2*runsEach)
	slices.SortFunc(got, func(a, b interval) int { return int(a.start - b.start) })
	for i := 1; i < len(got); i++ {
		assert.Less(t, got[i-1].end, got[i].start, "runs %d and %d overlap: %v", i-1, i, got)
		assert.Less(t, got[i-1].fence, got[i].fence, "fences of runs %d and %d do not increase: %v", i-1, i, got)
	}
}

func TestRun_ExitStatus(t *testing.T) {
	servers, nodes := masters(t, 3)
	addrs := redistest.Addrs(servers)
	holdKey(t, addrs, "taken")
	dir := t.TempDir()

	tests := []struct {
		name     string
		mode     string
		env      []string
		args     []string
		argv     []string // instead of the helper
		want     int
		inStderr string // the one line on stderr contains this
	}{
		{name: "the command's own status", mode: "exit", env: []string{helperExit + "=7"}, args: []string{"--key", "own", "--wait", "30s"}, want: 7},
		{name: "zero", mode: "exit", args: []string{"--key", "zero", "--wait", "30s"}, want: 0},
		{name: "held elsewhere", mode: "exit", args: []string{"--key", "taken"}, want: exitNotObtained, inStderr: `lock "taken" not obtained`},
		{name: "held elsewhere past --wait", mode: "exit", args: []string{"--key", "taken", "--wait", "300ms"}, want: exitNotObtained, inStderr: "within --wait 300ms"},
		{name: "command not found", args: []string{"--key", "nf", "--wait", "30s"}, argv: []string{"--", "./no-such-command"}, want: exitNotFound, inStderr: `"./no-such-command" not found`},
		{name: "command killed by a signal", args: []string{"--key", "sig", "--wait", "30s"}, argv: []string{"--", "sh", "-c", "kill -KILL $$"}, want: exitSignalBase + int(syscall.SIGKILL)},
		{name: "no command", args: []string{"--key", "x"}, argv: []string{}, want: exitUsage, inStderr: "no command given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, argv := helper(t, tt.mode, dir, tt.env...)
			if tt.argv != nil {
				argv = tt.argv
			}
			args := append([]string{"run", "--nodes", nodes, "--restart-guard", "0", "--node-timeout", "500ms"}, tt.args...)
			r := bin.run(t, env, append(args, argv...)...)
			assert.Equal(t, tt.want, r.code, "%v", r)
			if tt.inStderr != "" {
				lines := r.stderrLines()
				if assert.Len(t, lines, 1, "%v", r) {
					assert.Contains(t, lines[0], tt.inStderr)
				}
			}
		})
	}
}

func TestRun_SignalsArePassedOn(t *testing.T) {
	_, nodes := masters(t, 3)
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			env, argv := helper(t, "hold", dir, helperExit+"=3")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := bin.command(ctx, env, append(runArgs(nodes, "sig-"+sig.String(), "--wait", "30s"), argv...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			waitFor(t, 30*time.Second, "the command to start", func() bool {
				_, err := os.Stat(filepath.Join(dir, "ready"))
				return err == nil
			})
			require.NoError(t, cmd.Process.Signal(sig))
			r := finish(t, cmd.Wait(), &stdout, &stderr)
			assert.Equal(t, 3, r.code, "redlock should exit with the command's status\n%v", r)
			got, err := os.ReadFile(filepath.Join(dir, "signal"))
			require.NoError(t, err, "the command recorded no signal\n%v", r)
			assert.Equal(t, sig.String(), string(got))
		})
	}
}

// A signal while waiting ends redlock as the signal would, and says which
// signal it was by name.
func TestRun_SignalWhileWaiting_Exits128PlusN(t *testing.T) {
	servers, nodes := masters(t, 3)
	holdKey(t, redistest.Addrs(servers), "busy")
	for _, tt := range []struct {
		sig  syscall.Signal
		name string
	}{{syscall.SIGINT, "SIGINT"}, {syscall.SIGTERM, "SIGTERM"}} {
		t.Run(tt.name, func(t *testing.T) {
			// subscribed reports whether a client listens for release
			// announcements on the first master.
			subscribed := func() (bool, error) {
				conn, err := redis.Dial("tcp", servers[0].Addr())
				if err != nil {
					return false, err
				}
				defer conn.Close()
				n, err := redis.Int(conn.Do("PUBSUB", "NUMPAT"))
				chans, err2 := redis.Strings(conn.Do("PUBSUB", "CHANNELS"))
				return n+len(chans) > 0, errors.Join(err, err2)
			}
			waitFor(t, 30*time.Second, "an earlier run's subscription to end", func() bool {
				on, err := subscribed()
				return err == nil && !on
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := bin.command(ctx, nil, append(runArgs(nodes, "busy", "--wait", "50s"), "--", "true")...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			// Wait until it is parked in Lock: its client has subscribed
			// for the release announcement on the masters.
			waitFor(t, 30*time.Second, "redlock to wait for the lock", func() bool {
				on, err := subscribed()
				return err == nil && on
			})
			require.NoError(t, cmd.Process.Signal(tt.sig))
			r := finish(t, cmd.Wait(), &stdout, &stderr)
			assert.Equal(t, exitSignalBase+int(tt.sig), r.code, "%v", r)
			if lines := r.stderrLines(); assert.Len(t, lines, 1, "%v", r) {
				assert.Equal(t, `redlock run: stopped by `+tt.name+` while waiting for the lock on "busy"; the command was not run`, lines[0])
			}
		})
	}
}

// `redlock run` exits only once every master has been sent its delete: the
// deletes that Release leaves running at the quorum are finished by Close
// before the command exits. One master holds writes back for a moment, as a
// distant or busy one does, so its acquire and its delete are stragglers.
func TestRun_ExitsWithNothingLeftOnAnyMaster(t *testing.T) {
	servers, nodes := masters(t, 5)
	slow := servers[4]
	for i := range 10 {
		key := fmt.Sprintf("leftover%d", i)
		conn, err := redis.Dial("tcp", slow.Addr(), redis.DialConnectTimeout(time.Second))
		require.NoError(t, err)
		_, err = conn.Do("CLIENT", "PAUSE", 150, "WRITE")
		conn.Close()
		require.NoError(t, err)
		paused := time.Now()
		// --wait: a loaded machine may time out every master of a first
		// attempt, the slow one's 150ms pause aside; Lock tries again.
		r := bin.run(t, nil, "run", "--nodes", nodes, "--restart-guard", "0", "--key", key, "--wait", "5s", "--", "true")
		require.Equal(t, 0, r.code, "%v", r)
		time.Sleep(time.Until(paused.Add(250 * time.Millisecond))) // the pause is over: what was sent has run
		for _, s := range servers {
			conn, err := redis.Dial("tcp", s.Addr(), redis.DialConnectTimeout(time.Second))
			require.NoError(t, err)
			n, err := redis.Int(conn.Do("EXISTS", key))
			conn.Close()
			require.NoError(t, err)
			assert.Zero(t, n, "run %d: %s keeps the key after the command exited", i, s.Addr())
		}
	}
}

// -v shows what the library does on its own: here the extensions of a lock
// held longer than a third of its TTL.
func TestRun_Verbose_ShowsExtensions(t *testing.T) {
	_, nodes := masters(t, 3)
	r := bin.run(t, nil, "run", "-v", "--nodes", nodes, "--restart-guard", "0", "--key", "verbose", "--ttl", "300ms",
		"--", "sleep", "0.5")
	require.Equal(t, 0, r.code, "%v", r)
	assert.True(t, strings.Contains(r.stderr, "lock extended"), "no extension shown: %v", r)
}
