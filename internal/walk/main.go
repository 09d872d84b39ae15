// Command walk lists the Go files and functions of this module that one
// TryLock, Extend and Release enter on the default driver, against three
// redis-server processes on loopback. It is the count behind the README's
// "How the code is laid out": run it with `make walk`, which builds it with
// coverage counters (go build -cover -covermode=atomic -coverpkg=./...).
//
// For each call it clears the counters, makes the call on a warm client,
// and reads which blocks ran. Every goroutine's work until the call returns
// counts: the caller's, the driver's reader, and any background work the
// call began, so the figures are an upper bound on the caller's own walk.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime/coverage"
	"syscall"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "walk:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := os.MkdirTemp("", "quorumlock-walk")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addrs, stop, err := startMasters(dir, 3)
	defer stop()
	if err != nil {
		return err
	}
	c, err := redlock.NewFromAddrs(addrs)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Warm up: connections open, scripts loaded, masters trusted.
	for range 3 {
		l, err := c.TryLock(ctx, "walk:warm", time.Second)
		if err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		if err := l.Release(ctx); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	var l *redlock.Lock
	ops := []struct {
		name string
		call func() error
	}{
		{"TryLock", func() (err error) { l, err = c.TryLock(ctx, "walk:key", time.Second); return err }},
		{"Extend", func() error { return l.Extend(ctx, time.Second) }},
		{"Release", func() error { return l.Release(ctx) }},
	}
	for _, op := range ops {
		time.Sleep(100 * time.Millisecond) // let the previous call's background work end
		if err := coverage.ClearCounters(); err != nil {
			return fmt.Errorf("%w (build with -cover -covermode=atomic: make walk)", err)
		}
		if err := op.call(); err != nil {
			return fmt.Errorf("%s: %w", op.name, err)
		}
		out := fmt.Sprintf("%s/%s", dir, op.name)
		if err := os.Mkdir(out, 0o755); err != nil {
			return err
		}
		if err := errors.Join(coverage.WriteMetaDir(out), coverage.WriteCountersDir(out)); err != nil {
			return err
		}
		entered, err := read(out)
		if err != nil {
			return err
		}
		print(op.name, entered)
	}
	return nil
}

// startMasters starts n durable redis-server processes in dir, and returns
// their addresses and a func that stops exactly those.
func startMasters(dir string, n int) ([]string, func(), error) {
	bin, err := redistest.Binary()
	if err != nil {
		return nil, func() {}, err
	}
	ports, err := redistest.FreePorts(n)
	if err != nil {
		return nil, func() {}, err
	}
	var cmds []*exec.Cmd
	stop := func() {
		for _, cmd := range cmds {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	var addrs []string
	for i, port := range ports {
		d := fmt.Sprintf("%s/master%d", dir, i)
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, stop, err
		}
		cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", d,
			"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--logfile", d+"/redis.log")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return nil, stop, err
		}
		cmds = append(cmds, cmd)
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	for _, a := range addrs {
		if err := waitReady(a, 5*time.Second); err != nil {
			return nil, stop, err
		}
	}
	return addrs, stop, nil
}

// waitReady waits until the master at addr answers PING.
func waitReady(addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := ping(addr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer PING in %v: %w", addr, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
