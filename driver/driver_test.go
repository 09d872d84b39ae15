package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheck_Commands(t *testing.T) {
	listed := [][]string{{"INFO", "server"}}
	built := [][]string{{"GET", "stamp"}}
	ask := func() [][]string { return built }
	for _, tc := range []struct {
		name  string
		check Check
		want  [][]string
	}{
		{"listed", Check{Questions: listed}, listed},
		{"built when asked for", Check{Ask: ask}, built},
		{"a list wins over a builder", Check{Questions: listed, Ask: ask}, listed},
		{"none", Check{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.check.Commands())
		})
	}
}

// A connection that died is stale, whatever wraps its error; a master's
// reply, a timeout and anything else are not.
func TestStale(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{io.EOF, true},
		{fmt.Errorf("reading the reply: %w", io.ErrUnexpectedEOF), true},
		{reset, true},
		{&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, true},
		{net.ErrClosed, true},
		{Error("NOSCRIPT No matching script"), false},
		{timeout, false},
		{context.DeadlineExceeded, false},
		{errors.New("something else"), false},
		{nil, false},
	} {
		assert.Equal(t, tc.want, Stale(tc.err), "%v", tc.err)
	}
}

func TestRefused(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	nothingListens := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{Error("NOAUTH Authentication required."), true},
		{Error("WRONGPASS invalid username-password pair"), true},
		{Error("ERR max number of clients reached"), true},
		{io.EOF, true},
		{reset, true},
		{fmt.Errorf("redis: Conn is in a bad state: %w", reset), true},
		{timeout, false},
		{fmt.Errorf("redis: Conn is in a bad state: %w", timeout), false},
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
		{nothingListens, false},
		{nil, false},
	} {
		assert.Equal(t, tc.want, Refused(tc.err), "%v", tc.err)
	}
}
