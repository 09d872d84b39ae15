package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"

	"golang.org/x/term"
)

// child is the command that `redlock run` runs under the lock.
type child struct {
	cmd *exec.Cmd
	// group is true when the child leads a process group of its own, so
	// that signals reach everything it started.
	group bool
	// fromTerminal are signals the child gets from the terminal itself and
	// that are therefore not passed on a second time.
	fromTerminal map[os.Signal]bool
	exited       chan int // the exit status, once
}

// startChild starts argv with env and the given stdio. A command that is
// not found or cannot be executed gets the shell's 127 or 126.
func startChild(argv, env []string, stdin *os.File, stdout, stderr io.Writer) (*child, error) {
	tty := stdin != nil && term.IsTerminal(int(stdin.Fd()))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = procAttr(!tty)
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return nil, fail(exitNotFound, "command %q not found", argv[0])
		}
		return nil, fail(exitCannotExec, "cannot execute %q: %v", argv[0], err)
	}
	c := &child{cmd: cmd, group: !tty, exited: make(chan int, 1)}
	if tty {
		c.fromTerminal = terminalSignals()
	}
	go func() { c.exited <- exitStatus(cmd.Wait()) }()
	return c, nil
}

// forward passes a signal redlock received on to the child.
func (c *child) forward(s os.Signal) {
	if c.fromTerminal[s] {
		return
	}
	c.signal(s)
}

// exitStatus turns Wait's error into a status as a shell reports it.
func exitStatus(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if sig, ok := killedBy(ee); ok {
			return exitSignalBase + sig
		}
		return ee.ExitCode()
	}
	return exitError
}
