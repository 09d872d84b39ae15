//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// caughtSignals are the signals `redlock run` catches and passes on.
func caughtSignals() []os.Signal {
	return []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2}
}

// terminalSignals are those a terminal sends to its whole foreground group.
func terminalSignals() map[os.Signal]bool {
	return map[os.Signal]bool{syscall.SIGINT: true, syscall.SIGQUIT: true}
}

func procAttr(ownGroup bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: ownGroup}
	dieWithParent(a)
	return a
}

// signal sends s to the child's process group, or to the child alone when
// it shares redlock's group.
func (c *child) signal(s os.Signal) error {
	sig, ok := s.(syscall.Signal)
	if !ok {
		return c.cmd.Process.Signal(s)
	}
	if c.group {
		return syscall.Kill(-c.cmd.Process.Pid, sig)
	}
	return c.cmd.Process.Signal(sig)
}

// terminate asks the child to stop.
func (c *child) terminate() error { return c.signal(syscall.SIGTERM) }

// kill stops the child for good.
func (c *child) kill() error { return c.signal(syscall.SIGKILL) }

// killedBy reports the signal that ended the process, if one did.
func killedBy(ee *exec.ExitError) (int, bool) {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return int(ws.Signal()), true
}

// signalName names s as kill -l and shells do ("SIGTERM"), where
// s.String() gives a description ("terminated").
func signalName(s os.Signal) string {
	names := map[os.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGTERM: "SIGTERM", syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return "signal " + s.String()
}

// signalNumber returns the number of s, as in 128+N.
func signalNumber(s os.Signal) int {
	if sig, ok := s.(syscall.Signal); ok {
		return int(sig)
	}
	return 0
}
