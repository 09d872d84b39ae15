// Package redistest starts real redis-server processes on loopback for tests,
// and kills, stops, pauses and restarts them by PID. It also joins them into
// Redis Clusters with redis-cli, and fails a cluster's masters over.
//
// A missing redis-server or redis-cli binary fails the test: integration
// tests never skip.
package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Persistence says how a server keeps its data across a restart.
type Persistence int

const (
	// Ephemeral keeps nothing: a restarted server comes back empty.
	Ephemeral Persistence = iota
	// FsyncAlways logs every write and fsyncs it before replying
	// (appendonly yes, appendfsync always).
	FsyncAlways
)

// Server is one redis-server child process on a loopback port.
type Server struct {
	Port int
	Dir  string // working directory, removed with the test

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	bin    string
	extra  []string
}

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// Binary returns the path of redis-server, or an error that says how to install it.
func Binary() (string, error) {
	if p := os.Getenv("REDIS_SERVER"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New("redistest: redis-server not found on PATH; install it (apt-get install -y redis-server) or set REDIS_SERVER")
	}
	return p, nil
}

// Start starts n servers with the given persistence and extra arguments
// (e.g. "--requirepass", "x"), waits until each answers PING, and registers
// their removal with tb.Cleanup. It fails tb if any cannot start.
func Start(tb testing.TB, n int, p Persistence, extra ...string) []*Server {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		tb.Fatal(err)
	}
	return StartWith(tb, bin, n, p, extra...)
}

// StartWith is Start with the redis-server binary at bin, such as Redis 6.0
// (see Binary60).
func StartWith(tb testing.TB, bin string, n int, p Persistence, extra ...string) []*Server {
	tb.Helper()
	servers := make([]*Server, 0, n)
	tb.Cleanup(func() {
		for _, s := range servers {
			s.Kill()
		}
	})
	for range n {
		s := &Server{Dir: tb.TempDir(), bin: bin, extra: extra}
		var err error
		for try := 0; try < 5; try++ { // a freed port can be taken again before we bind it
			if s.Port, err = FreePort(); err != nil {
				continue
			}
			if err = s.start(p); err == nil {
				break
			}
		}
		if err != nil {
			tb.Fatalf("redistest: starting redis-server: %v", err)
		}
		servers = append(servers, s)
	}
	return servers
}

// Addrs returns the servers' addresses.
func Addrs(servers []*Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Addr()
	}
	return out
}

func (s *Server) args(p Persistence) []string {
	a := []string{
		"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--dir", s.Dir,
		"--save", "", "--daemonize", "no", "--protected-mode", "no",
		"--logfile", filepath.Join(s.Dir, "redis.log"), "--loglevel", "warning",
	}
	if p == FsyncAlways {
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		a = append(a, "--appendonly", "no")
	}
	return append(a, s.extra...)
}

func (s *Server) start(p Persistence) error {
	cmd := exec.Command(s.bin, s.args(p)...)
	cmd.Dir = s.Dir
	// The server dies with the test binary, even if the binary is killed.
	// It leads a process group of its own, which the children it forks
	// (an RDB save for a replica, an AOF rewrite) join, so that Kill can
	// end them too (see signal).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	if err := s.waitReady(5 * time.Second); err != nil {
		s.Kill()
		return fmt.Errorf("%s: %w (log: %s)", s.Addr(), err, s.logTail())
	}
	return nil
}

func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return errors.New("redis-server exited at start")
		default:
		}
		if err := ping(s.Addr()); err == nil {
			// A port found free may be taken, before this server binds it,
			// by a server another test binary starts at the same moment:
			// then that one answers, and this one exits.
			if pid := processID(s.Addr()); pid != 0 && pid != s.PID() {
				return fmt.Errorf("another redis-server (pid %d) answers on the port", pid)
			}
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("redis-server did not answer PING in time")
}

// processID returns the process_id that INFO server gives at addr, or 0 if
// it cannot be read, as from a server that requires a password.
func processID(addr string) int {
	info, err := DoAt(addr, "INFO", "server")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			pid, _ := strconv.Atoi(v)
			return pid
		}
	}
	return 0
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	// A server that requires a password answers NOAUTH: it is up all the same.
	if !strings.HasPrefix(line, "+PONG") && !strings.HasPrefix(line, "-NOAUTH") {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

// Uptime is the server's uptime_in_seconds from INFO server, as Redis gives
// it: whole seconds, and up to one ahead of the time really passed.
func (s *Server) Uptime() (int, error) {
	f, err := s.Info("server")
	if err != nil {
		return 0, err
	}
	v, ok := f["uptime_in_seconds"]
	if !ok {
		return 0, errors.New("INFO server has no uptime_in_seconds")
	}
	return strconv.Atoi(v)
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	if len(b) > 400 {
		b = b[len(b)-400:]
	}
	return strings.TrimSpace(string(b))
}

// PID returns the process id, or 0 when the server is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *Server) signal(sig syscall.Signal, wait bool) error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
		// Gone already, as a server that could not bind its port is: it
		// is not running either.
		if wait {
			s.forget(cmd)
		}
		return nil
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil {
		if !errors.Is(err, os.ErrProcessDone) {
			return err
		}
		// It exited since the look above, and Wait has reaped it.
		<-exited
		if wait {
			s.forget(cmd)
		}
		return nil
	}
	if sig == syscall.SIGKILL {
		// A killed server cannot stop the children it forked: a child still
		// writing its RDB or AOF file into the server's directory would keep
		// the test's cleanup from removing it. They die with it.
		defer endGroup(cmd.Process.Pid)
	}
	if !wait {
		return nil
	}
	if sig == syscall.SIGTERM {
		cmd.Process.Signal(syscall.SIGCONT) // a paused server cannot act on SIGTERM
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
	s.forget(cmd)
	return nil
}

// endGroup kills what is left of the process group that the server with
// pid led, and waits, up to 5 s, until none of it runs. A member killed
// but not yet reaped by init (a zombie) writes nothing, and does not count.
func endGroup(pid int) {
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(-pid, syscall.SIGKILL) == nil && groupRuns(pid) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// groupRuns reports whether a process of group pgid runs, from /proc.
func groupRuns(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
		rest := b[bytes.LastIndexByte(b, ')')+1:]
		var state string
		var ppid, pgrp int
		if _, err := fmt.Sscan(string(rest), &state, &ppid, &pgrp); err == nil && pgrp == pgid && state != "Z" {
			return true
		}
	}
	return false
}

// forget records that cmd, the server's process, has exited.
func (s *Server) forget(cmd *exec.Cmd) {
	s.mu.Lock()
	if s.cmd == cmd {
		s.cmd = nil
	}
	s.mu.Unlock()
}

// Kill sends SIGKILL and waits for the process to exit.
func (s *Server) Kill() error { return s.signal(syscall.SIGKILL, true) }

// Stop sends SIGTERM (a clean shutdown) and waits for the process to exit.
func (s *Server) Stop() error { return s.signal(syscall.SIGTERM, true) }

// Pause sends SIGSTOP: the server keeps its sockets but answers nothing.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP, false) }

// Resume sends SIGCONT to a paused server.
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT, false) }

// Restart starts a stopped or killed server again on the same port and dir.
// With Ephemeral it comes back empty; with FsyncAlways it reloads its log.
func (s *Server) Restart(p Persistence) error {
	if s.PID() != 0 {
		return fmt.Errorf("redistest: %s is still running", s.Addr())
	}
	var err error
	for try := 0; try < 20; try++ { // the old socket may linger for a moment
		if err = s.start(p); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}
