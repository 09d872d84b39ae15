package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockedBuffer is a buffer the test reads while the command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// redlock run --metrics-addr serves the lock's metrics while the command
// runs: the lock held, its attempt, and each master's state.
func TestRun_MetricsAddr_ServesTheLocksMetrics(t *testing.T) {
	servers, nodes := masters(t, 3)
	dir := t.TempDir()
	env, argv := helper(t, "hold", dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := bin.command(ctx, env, append(runArgs(nodes, "metrics", "--metrics-addr", "127.0.0.1:0"), argv...)...)
	var stdout bytes.Buffer
	var stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	waitFor(t, 30*time.Second, "the command to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "ready"))
		return err == nil
	})
	url := regexp.MustCompile(`metrics at (http://\S+/metrics)`).FindStringSubmatch(stderr.String())
	require.Len(t, url, 2, "where the metrics are: %q", stderr.String())
	scrape := func() string {
		resp, err := http.Get(url[1])
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		return string(body)
	}
	// The lock returns at a quorum: the last master's reply, which sets its
	// state, may land a moment after the command is ready.
	text := scrape()
	waitFor(t, 5*time.Second, "every master's state in the metrics", func() bool {
		text = scrape()
		return strings.Count(text, `quorumlock_master_state="up"} 1`) == len(servers)
	})
	for _, want := range []string{
		"# TYPE quorumlock_lock_held gauge\nquorumlock_lock_held 1\n",
		"quorumlock_lock_attempts_total{quorumlock_outcome=\"obtained\"} 1\n",
		"quorumlock_lock_wait_duration_seconds_count{quorumlock_operation=\"trylock\",quorumlock_outcome=\"obtained\"} 1\n",
	} {
		assert.Contains(t, text, want)
	}
	for _, s := range servers {
		assert.Contains(t, text, `quorumlock_master_state{quorumlock_master_address="`+s.Addr()+`",quorumlock_master_state="up"} 1`)
	}
	assert.NotContains(t, text, "metrics", "no key in the metrics") // the key is "metrics"

	require.NoError(t, cmd.Process.Signal(syscall.SIGUSR1))
	r := finish(t, cmd.Wait(), &stdout, bytes.NewBufferString(stderr.String()))
	assert.Equal(t, 0, r.code, "%v", r)
	_, err := http.Get(url[1])
	assert.Error(t, err, "the server ends with redlock run")
}

func TestRun_MetricsAddr_Taken_Fails(t *testing.T) {
	_, nodes := masters(t, 3)
	dir := t.TempDir()
	env, argv := helper(t, "exit", dir)
	r := bin.run(t, env, append(runArgs(nodes, "m", "--metrics-addr", "256.0.0.1:1"), argv...)...)
	assert.Equal(t, 1, r.code, "%v", r)
	assert.Contains(t, r.stderr, "--metrics-addr 256.0.0.1:1")
}

// redlock bench --outcomes prints how attempts and releases ended, from the
// client's events.
func TestBench_Outcomes(t *testing.T) {
	_, nodes := masters(t, 3)
	r := bin.run(t, nil, "bench", "--nodes", nodes, "--restart-guard", "0", "--node-timeout", "500ms",
		"--duration", "1s", "--concurrency", "2", "--outcomes")
	assert.Equal(t, 0, r.code, "%v", r)
	m := regexp.MustCompile(`(?m)^\s+obtained\s+(\d+)\s*$`).FindStringSubmatch(r.stdout)
	require.Len(t, m, 2, "an obtained row\n%v", r)
	rel := regexp.MustCompile(`(?m)^\s+released\s+(\d+)\s*$`).FindStringSubmatch(r.stdout)
	require.Len(t, rel, 2, "a released row\n%v", r)
	assert.Contains(t, r.stdout, "outcome  attempts  releases")
	acquired := regexp.MustCompile(`(?m)^\s+acquire\s+(\d+)\s`).FindStringSubmatch(r.stdout)
	require.Len(t, acquired, 2)
	assert.Equal(t, acquired[1], m[1], "the events count the acquisitions the bench counted")
	assert.Equal(t, acquired[1], rel[1])
}
