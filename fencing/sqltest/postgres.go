package sqltest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// PostgresBinEnv names the environment variable that points at the
// directory of initdb and postgres; by default the newest
// /usr/lib/postgresql/*/bin, where Debian's postgresql package puts them.
const PostgresBinEnv = "POSTGRES_BIN"

// startLimit bounds initdb and the server's start.
const startLimit = 60 * time.Second

// Postgres is one PostgreSQL server, a child process of the test on a
// loopback port, with its data in a directory of its own. Everything goes
// with the test: the server is shut down and the directory removed.
type Postgres struct {
	Port int
	Dir  string // the data directory, the socket and the log

	bin     string
	cred    *syscall.Credential // the postgres user's, when the test runs as root
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	created int // databases made by NewDatabase
}

// PostgresBin returns the directory of initdb and postgres, or an error
// that says how to install them.
func PostgresBin() (string, error) {
	if dir := os.Getenv(PostgresBinEnv); dir != "" {
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// The newest major version first: 9.6 sorts after 15 as text.
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("sqltest: PostgreSQL's initdb and postgres not found in /usr/lib/postgresql/*/bin or on PATH; install them (apt-get install -y postgresql) or set " + PostgresBinEnv)
}

func majorOf(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// StartPostgres creates a cluster with initdb in a new directory, starts a
// server on a free loopback port, waits until it answers, and registers its
// shutdown and the directory's removal with tb.Cleanup. The server trusts
// every local connection, as the user postgres. As root it runs as the
// postgres user, since the server refuses to run as root. It fails tb if
// PostgreSQL is not installed or does not start.
func StartPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	bin, err := PostgresBin()
	if err != nil {
		tb.Fatal(err)
	}
	p := &Postgres{bin: bin}
	if p.cred, err = serverCredential(); err != nil {
		tb.Fatal(err)
	}
	if p.Dir, err = os.MkdirTemp("", "quorumlock-pg-"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(p.Dir) })
	if p.cred != nil {
		if err := os.Chown(p.Dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := p.initdb(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := p.Stop(); err != nil {
			tb.Errorf("sqltest: stopping PostgreSQL: %v", err)
		}
	})
	for try := 0; try < 5; try++ { // a freed port can be taken again before the server binds it
		if p.Port, err = redistest.FreePort(); err != nil {
			continue
		}
		if err = p.start(); err == nil {
			return p
		}
	}
	tb.Fatalf("sqltest: starting PostgreSQL: %v", err)
	return nil
}

// serverCredential returns the postgres user's IDs when the test runs as
// root, and nil otherwise (the server then runs as the test's user).
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("sqltest: PostgreSQL refuses to run as root, and there is no postgres user to run it as (it comes with apt-get install -y postgresql): %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("sqltest: postgres user has uid %q, gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func (p *Postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	return cmd
}

func (p *Postgres) dataDir() string { return filepath.Join(p.Dir, "data") }

func (p *Postgres) initdb() error {
	ctx, cancel := context.WithTimeout(context.Background(), startLimit)
	defer cancel()
	cmd := p.command("initdb", "-D", p.dataDir(), "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--locale=C", "--no-sync", "--no-instructions")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("sqltest: initdb: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("sqltest: initdb: %w: %s", err, strings.TrimSpace(out.String()))
		}
		return nil
	case <-ctx.Done():
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("sqltest: initdb took longer than %v", startLimit)
	}
}

// start runs the server in the foreground as a child process, so that its
// PID is the one the test tracks and stops.
func (p *Postgres) start() error {
	log, err := os.OpenFile(p.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	// Durability is of no use to a throwaway server; isolation and locking
	// are untouched by these settings.
	cmd := p.command("postgres", "-D", p.dataDir(), "-p", strconv.Itoa(p.Port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+p.Dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=16MB", "-c", "max_connections=100", "-c", "logging_collector=off")
	cmd.Stdout, cmd.Stderr = log, log
	// If the test binary dies, the server gets SIGINT, PostgreSQL's fast
	// shutdown, which removes its shared memory.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGINT
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	if err := p.waitReady(); err != nil {
		p.Stop()
		return fmt.Errorf("port %d: %w (log: %s)", p.Port, err, p.logTail())
	}
	return nil
}

func (p *Postgres) logPath() string { return filepath.Join(p.Dir, "postgres.log") }

func (p *Postgres) logTail() string {
	b, _ := os.ReadFile(p.logPath())
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return strings.TrimSpace(string(b))
}

func (p *Postgres) waitReady() error {
	db, err := sql.Open("pgx", p.dsn("postgres")+"&connect_timeout=2")
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(startLimit)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return errors.New("postgres exited at start")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("postgres did not answer within %v: %v", startLimit, err)
}

// PID returns the server's process id, or 0 when it is not running.
func (p *Postgres) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Stop shuts the server down: SIGINT (fast shutdown: connections are ended,
// transactions rolled back), then SIGQUIT and SIGKILL if it takes longer
// than ten seconds each. It signals only the server's own PID.
func (p *Postgres) Stop() error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGKILL} {
		select {
		case <-exited:
			return nil
		default:
		}
		if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return err
		}
		select {
		case <-exited:
			return nil
		case <-time.After(10 * time.Second):
		}
	}
	return fmt.Errorf("postgres (pid %d) did not exit", cmd.Process.Pid)
}

// dsn is the URL of database name on the server, as the user postgres.
func (p *Postgres) dsn(name string) string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)),
		Path: "/" + name, RawQuery: "sslmode=disable"}
	return u.String()
}

// DSN returns the URL of the server's postgres database, for pgx's
// database/sql driver ("pgx") and for psql.
func (p *Postgres) DSN() string { return p.dsn("postgres") }

// Open opens the postgres database through pgx's database/sql driver and
// registers its closing with tb.Cleanup.
func (p *Postgres) Open(tb testing.TB) *sql.DB {
	tb.Helper()
	return openPgx(tb, p.DSN())
}

// NewDatabase creates an empty database on the server, opens it, and
// registers its closing with tb.Cleanup; its name is the second value.
func (p *Postgres) NewDatabase(tb testing.TB) (*sql.DB, string) {
	tb.Helper()
	p.mu.Lock()
	p.created++
	name := fmt.Sprintf("db%d", p.created)
	p.mu.Unlock()
	admin, err := sql.Open("pgx", p.DSN())
	if err != nil {
		tb.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		tb.Fatalf("sqltest: creating database %s: %v", name, err)
	}
	return openPgx(tb, p.dsn(name)), name
}

func openPgx(tb testing.TB, dsn string) *sql.DB {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		tb.Fatalf("sqltest: connecting to PostgreSQL: %v", err)
	}
	return db
}
