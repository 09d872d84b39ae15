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
	"time"

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

func TestRefusals_SpaceTheDials(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	refusal := Error("NOAUTH Authentication required.")
	var r Refusals
	assert.NoError(t, r.Held(t0), "no refusal, no spacing")
	now := t0
	for _, wait := range []time.Duration{50, 100, 200, 400, 800, 1000, 1000} {
		wait *= time.Millisecond
		r.Add(refusal, now)
		assert.Equal(t, error(refusal), r.Held(now.Add(wait-time.Millisecond)), "held for %v", wait)
		assert.NoError(t, r.Held(now.Add(wait)), "a dial may go after %v", wait)
		now = now.Add(wait)
	}
	r.Served()
	r.Add(refusal, now)
	assert.NoError(t, r.Held(now.Add(50*time.Millisecond)), "a connection that served starts the spacing over")
}
