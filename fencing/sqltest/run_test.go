package sqltest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/fencing"
	"github.com/quorumlock/quorumlock/fencing/sqltest"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// buildRedlock builds the redlock command from the repository's root
// module into a temporary directory.
func buildRedlock(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	require.Contains(t, string(mod), "module github.com/quorumlock/quorumlock\n", "the root module is two directories up")
	bin := filepath.Join(t.TempDir(), "redlock")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/redlock")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/redlock: %s", out)
	return bin
}

// processState returns the state letter of /proc/pid/stat (R, S, T, Z...),
// or "" once the process is gone.
func processState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// awaitState waits, at most limit, until pid's state is one of states.
func awaitState(t *testing.T, pid int, limit time.Duration, states ...string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		st := processState(pid)
		for _, want := range states {
			if st == want {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d did not reach state %v within %v (state %q)", pid, states, limit, processState(pid))
}

// TestRedlockRun_PsqlScript is the script story of docs/fencing.md, with real
// processes: `redlock run` takes the lock and runs a shell that stops
// itself (SIGSTOP) before it runs psql; the test stops redlock run too, so
// that the lock expires unextended. A second `redlock run` takes the lock
// and credits the account. Then the frozen shell resumes first, before its
// redlock run can notice the loss and end it, and runs the script with its
// old REDLOCK_FENCE. Guarded, the script's SQL check refuses it and the
// account keeps one credit; without the check (the control), the stale
// credit lands.
func TestRedlockRun_PsqlScript(t *testing.T) {
	psql, err := exec.LookPath("psql")
	require.NoError(t, err, "psql comes with apt-get install -y postgresql")
	redlockBin := buildRedlock(t)
	masters := redistest.Addrs(redistest.Start(t, 3, redistest.Ephemeral))
	pg := sqltest.StartPostgres(t)
	script, err := os.ReadFile(filepath.Join("testdata", "credit.sql"))
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "fencing.md"))
	require.NoError(t, err)
	require.Contains(t, string(readme), "```sql\n"+string(script)+"```", "docs/fencing.md shows the script this test runs")
	const check = "SELECT quorumlock_fences_check('ledger:1', :fence); -- first: stops here if a newer holder has written\n"
	require.Contains(t, string(script), check)

	tests := []struct {
		name    string
		script  string
		balance int
	}{
		{name: "guarded", script: string(script), balance: 100},
		{name: "without the check the stale credit lands", script: strings.Replace(string(script), check, "", 1), balance: 200},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			d := sqltest.PostgreSQL(t, pg)
			g, err := fencing.New(fencing.PostgreSQL)
			require.NoError(t, err)
			require.NoError(t, g.InstallFunction(ctx, d.DB))
			_, err = d.DB.ExecContext(ctx, "CREATE TABLE ledger (id int PRIMARY KEY, balance int NOT NULL, fence bigint NOT NULL DEFAULT 0); INSERT INTO ledger VALUES (1, 0, 0)")
			require.NoError(t, err)
			dir := t.TempDir()
			scriptPath := filepath.Join(dir, "credit.sql")
			require.NoError(t, os.WriteFile(scriptPath, []byte(tt.script), 0o644))
			dsn := strings.Replace(pg.DSN(), "/postgres?", "/"+dbName(t, d)+"?", 1)
			key := "ledger-" + strconv.Itoa(i)
			lockArgs := []string{"run", "--nodes", strings.Join(masters, ","), "--restart-guard", "0", "--key", key}
			psqlArgs := []string{psql, "-X", "-q", "-At", "-d", dsn, "-f", scriptPath}

			// A: the shell writes its PID, stops itself, and runs psql
			// once it is continued.
			pidFile := filepath.Join(dir, "shell.pid")
			// Files, not buffers: the test reads them while A runs.
			aOut, err := os.Create(filepath.Join(dir, "a.out"))
			require.NoError(t, err)
			defer aOut.Close()
			aErr, err := os.Create(filepath.Join(dir, "a.err"))
			require.NoError(t, err)
			defer aErr.Close()
			stderrA := func() string { b, _ := os.ReadFile(aErr.Name()); return strings.TrimSpace(string(b)) }
			a := exec.Command(redlockBin, append(append(lockArgs, "--ttl", "1s", "--", "sh", "-c", `echo $$ > "$0"; kill -STOP $$; exec "$@"`, pidFile), psqlArgs...)...)
			a.Stdout, a.Stderr = aOut, aErr
			a.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			require.NoError(t, a.Start())
			aDone := make(chan error, 1)
			go func() { aDone <- a.Wait() }()
			var shell int
			t.Cleanup(func() {
				// Only the processes this test started, by PID.
				if shell > 0 {
					syscall.Kill(shell, syscall.SIGKILL)
				}
				a.Process.Signal(syscall.SIGCONT)
				a.Process.Kill()
				<-aDone
			})
			deadline := time.Now().Add(20 * time.Second)
			for shell == 0 && time.Now().Before(deadline) {
				if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
					shell, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				}
				time.Sleep(10 * time.Millisecond)
			}
			require.Positive(t, shell, "A's shell never started: %s", stderrA())
			awaitState(t, shell, 10*time.Second, "T")
			require.NoError(t, a.Process.Signal(syscall.SIGSTOP))
			awaitState(t, a.Process.Pid, 10*time.Second, "T")
			frozen := time.Now()

			// B waits for A's lock to expire, then credits the account.
			b := exec.Command(redlockBin, append(append(lockArgs, "--wait", "20s", "--"), psqlArgs...)...)
			out, err := b.CombinedOutput()
			require.NoError(t, err, "B: %s", out)
			fenceB, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
			if tt.balance == 100 {
				require.NoError(t, err, "B's script prints its recorded fence: %q", out)
			}
			waited := time.Since(frozen)

			// A's shell resumes before its redlock run does.
			require.NoError(t, syscall.Kill(shell, syscall.SIGCONT))
			awaitState(t, shell, 20*time.Second, "Z", "")
			require.NoError(t, a.Process.Signal(syscall.SIGCONT))
			select {
			case err = <-aDone:
				aDone <- err // for the clean-up
			case <-time.After(30 * time.Second):
				t.Fatal("A's redlock run did not exit")
			}
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "A's redlock run must fail: %v; stderr: %s", err, stderrA())

			var balance int
			var fence int64
			require.NoError(t, d.DB.QueryRowContext(ctx, "SELECT balance, fence FROM ledger WHERE id = 1").Scan(&balance, &fence))
			assert.Equal(t, tt.balance, balance)
			if tt.balance == 100 {
				assert.Equal(t, fenceB, fence, "the row keeps B's write")
				assert.Contains(t, stderrA(), "fencing: stale fence: resource \"ledger:1\"")
				assert.Contains(t, stderrA(), "is older than "+strconv.FormatInt(fenceB, 10))
			}
			t.Logf("B got the lock %v after A froze; A's redlock run exited %d; its stderr: %s",
				waited.Round(time.Millisecond), exit.ExitCode(), stderrA())
		})
	}
}

// dbName returns the name of the database d is connected to.
func dbName(t *testing.T, d sqltest.Database) string {
	t.Helper()
	var name string
	require.NoError(t, d.DB.QueryRow("SELECT current_database()").Scan(&name))
	return name
}
