// Command walk lists the Go files and functions of this module that an
// operation enters on the default driver, against three redis-server
// processes on loopback: one TryLock, Extend and Release, then the
// background work the walks name apart, each with the call that
// starts it: a refused TryLock's roll-back, an Extend's retake of a master
// that lost the key, and a Release's hand-over to a waiter of the same
// client. It is the count behind docs/layout.md: run it with `make walk`,
// which builds it with coverage counters (go build -cover
// -covermode=atomic -coverpkg=./...).
//
// For each it clears the counters, makes the call on a warm client, waits
// for the work the call started, and reads which blocks ran. Every
// goroutine's work in that time counts: the caller's, the driver's reader,
// and the background work, so the figures are an upper bound on the
// caller's own walk.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/coverage"
	"strings"
	"syscall"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// ttl outlives the reading of the counters between two calls of a lock:
// the first `go tool covdata` of a machine may build the tool first.
const ttl = 30 * time.Second

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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Warm up: connections open, scripts loaded, masters trusted.
	for range 3 {
		l, err := c.TryLock(ctx, "walk:warm", ttl)
		if err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		if err := l.Release(ctx); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	var l, held, handed *redlock.Lock
	var got chan error
	ops := []struct {
		name   string
		beyond string       // the plain operation whose files the walk is compared with
		setup  func() error // before the counters are cleared
		call   func() error // counted, with what it leaves running until after returns
		after  func() error
	}{
		{name: "TryLock", call: func() (err error) { l, err = c.TryLock(ctx, "walk:key", ttl); return err }},
		{name: "Extend", call: func() error { return l.Extend(ctx, ttl) }},
		{name: "Release", call: func() error { return l.Release(ctx) }},
		{
			// Another holder's token on two masters: the attempt wins one
			// and rolls it back.
			name: "TryLock refused, with its roll-back", beyond: "TryLock",
			setup: func() error {
				return errors.Join(command(addrs[0], "SET", "walk:refused", "other", "PX", "10000"),
					command(addrs[1], "SET", "walk:refused", "other", "PX", "10000"))
			},
			call: func() error {
				if _, err := c.TryLock(ctx, "walk:refused", ttl); !errors.Is(err, redlock.ErrNotObtained) {
					return fmt.Errorf("want ErrNotObtained, got %v", err)
				}
				return nil
			},
			after: settle,
		},
		{
			// The key lost on one master: the extension holds on two, and
			// sets it again on the third in the background.
			name: "Extend, with the retake of a master that lost the key", beyond: "Extend",
			setup: func() (err error) {
				if held, err = c.TryLock(ctx, "walk:retake", ttl); err != nil {
					return err
				}
				return command(addrs[0], "DEL", "walk:retake")
			},
			call:  func() error { return held.Extend(ctx, ttl) },
			after: settle,
		},
		{
			// A goroutine of the same client waits for the key: the release
			// hands it over.
			name: "Release, with the hand-over to a waiter of this client", beyond: "Release",
			setup: func() (err error) {
				if held, err = c.TryLock(ctx, "walk:hand", ttl); err != nil {
					return err
				}
				got = make(chan error, 1)
				go func() {
					var err error
					handed, err = c.Lock(ctx, "walk:hand", ttl)
					got <- err
				}()
				return settle() // the waiter is in line
			},
			call:  func() error { return held.Release(ctx) },
			after: func() error { return <-got },
		},
	}
	walked := map[string][]file{}
	for _, op := range ops {
		time.Sleep(100 * time.Millisecond) // let the previous call's background work end
		if op.setup != nil {
			if err := op.setup(); err != nil {
				return fmt.Errorf("%s: set-up: %w", op.name, err)
			}
		}
		if err := coverage.ClearCounters(); err != nil {
			return fmt.Errorf("%w (build with -cover -covermode=atomic: make walk)", err)
		}
		if err := op.call(); err != nil {
			return fmt.Errorf("%s: %w", op.name, err)
		}
		if op.after != nil {
			if err := op.after(); err != nil {
				return fmt.Errorf("%s: %w", op.name, err)
			}
		}
		out := filepath.Join(dir, "counters")
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		if err := errors.Join(coverage.WriteMetaDir(out), coverage.WriteCountersDir(out)); err != nil {
			return err
		}
		entered, err := read(out)
		if err != nil {
			return err
		}
		walked[op.name] = entered
		report(op.name, entered)
		if op.beyond != "" {
			fmt.Printf("  beyond %s's: %s\n", op.beyond, strings.Join(beyond(entered, walked[op.beyond]), " "))
		}
		os.RemoveAll(out)
	}
	if handed != nil {
		return handed.Release(ctx)
	}
	return nil
}

// settle waits for background work to end: a roll-back, a retake, a
// waiter getting in line.
func settle() error {
	time.Sleep(300 * time.Millisecond)
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
		err := command(addr, "PING")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer PING in %v: %w", addr, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// command sends one command to the master at addr, and fails on an error
// reply.
func command(addr string, args ...string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	req := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		req += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(req)); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.HasPrefix(line, "-") {
		return fmt.Errorf("%s %v: %s", addr, args, strings.TrimSpace(line[1:]))
	}
	return nil
}
