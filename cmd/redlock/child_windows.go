//go:build windows

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// caughtSignals are the signals `redlock run` catches: on Windows, Ctrl-C,
// which the console delivers to the child as well.
func caughtSignals() []os.Signal { return []os.Signal{os.Interrupt} }

// terminalSignals: the console sends Ctrl-C to every process attached.
func terminalSignals() map[os.Signal]bool { return map[os.Signal]bool{os.Interrupt: true} }

func procAttr(bool) *syscall.SysProcAttr { return nil }

// signal cannot deliver signals on Windows; only a kill is possible.
func (c *child) signal(os.Signal) error { return nil }

// terminate stops the child: Windows has no polite request, so --grace
// does not apply.
func (c *child) terminate() error { return c.cmd.Process.Kill() }

// kill stops the child for good.
func (c *child) kill() error { return c.cmd.Process.Kill() }

func killedBy(*exec.ExitError) (int, bool) { return 0, false }

func signalNumber(os.Signal) int { return 2 }

// signalName names the one signal caught on Windows.
func signalName(os.Signal) string { return "Ctrl-C" }
