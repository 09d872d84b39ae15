package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// binary is the redlock command built once for the end-to-end tests.
type binary struct{ path string }

// The built command, set once in TestMain before any test runs.
var bin binary

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	dir, err := os.MkdirTemp("", "redlock-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin.path = filepath.Join(dir, "redlock")
	args := []string{"build", "-o", bin.path}
	if raceBuild {
		args = append(args, "-race")
	}
	build := exec.Command(goTool(), append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building redlock: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// result is what one run of the command left.
type result struct {
	code           int
	stdout, stderr string
}

// stderrLines returns the non-empty lines on stderr.
func (r result) stderrLines() []string {
	var out []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// command returns the command for args with env added to the test's own
// environment, minus REDLOCK_NODES, which only the test sets.
func (b binary) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, b.path, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, nodesEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs the command to its end, at most a minute.
func (b binary) run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := b.command(ctx, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return finish(t, cmd.Run(), &stdout, &stderr)
}

// finish turns Run's or Wait's error into a result; anything but an exit
// status fails the test.
func finish(t *testing.T, err error, stdout, stderr *bytes.Buffer) result {
	t.Helper()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		require.NoError(t, err, "running redlock\n%v", r)
	}
	require.NotContains(t, r.stderr, "goroutine ", "a stack trace on stderr\n%v", r)
	return r
}

// masters starts n real redis-server processes and returns them with the
// --nodes value that names them.
func masters(t *testing.T, n int) ([]*redistest.Server, string) {
	t.Helper()
	s := redistest.Start(t, n, redistest.Ephemeral)
	return s, strings.Join(redistest.Addrs(s), ",")
}

// waitFor polls cond every 20ms for up to limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
