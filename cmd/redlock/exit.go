package main

import (
	"errors"
	"fmt"
	"strings"
)

// Exit statuses. The command's own status passes through `redlock run`; the
// two lock outcomes sit in 90-91, a range no shell, sysexits.h or common tool
// gives a meaning, so scripts can tell them from the command's.
const (
	exitOK          = 0
	exitError       = 1   // a master unreachable, fewer than a quorum answering, a check failed
	exitUsage       = 2   // bad flags or arguments
	exitNotObtained = 90  // run: the lock was not obtained (held elsewhere, or --wait ran out)
	exitLost        = 91  // run: the lock was lost while the command ran
	exitCannotExec  = 126 // run: the command was found but could not be started
	exitNotFound    = 127 // run: the command was not found
	exitSignalBase  = 128 // 128+N: killed by signal N, as shells report it
)

// exitErr ends a subcommand with a given status and, unless msg is empty,
// one line on stderr.
type exitErr struct {
	code int
	msg  string
}

func (e *exitErr) Error() string { return e.msg }

// fail returns an error that exits with code and prints the formatted line.
func fail(code int, format string, args ...any) error {
	return &exitErr{code: code, msg: fmt.Sprintf(format, args...)}
}

// usageErr is a bad flag or argument: exit 2.
func usageErr(format string, args ...any) error { return fail(exitUsage, format, args...) }

// exitWith ends with code and prints nothing more.
func exitWith(code int) error { return &exitErr{code: code} }

// exitCode maps a subcommand's error to its exit status and stderr line.
func exitCode(err error) (int, string) {
	if err == nil {
		return exitOK, ""
	}
	var e *exitErr
	if errors.As(err, &e) {
		return e.code, oneLine(e.msg)
	}
	return exitError, oneLine(err.Error())
}

// oneLine flattens a message onto one line: errors.Join and some node
// errors span several, and the CLI promises one.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r", "")
	s = strings.ReplaceAll(s, "\n", "; ")
	// The CLI's own prefix already says redlock.
	return strings.ReplaceAll(s, "redlock: ", "")
}
