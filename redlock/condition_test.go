package redlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
)

// A master that fails for good (NOAUTH here) and now and then also times
// out is reported once: the timeouts do not end its failure, and the next
// NOAUTH is not a new one. An answer ends it.
func TestCondition_PassingFailuresDoNotInterruptAPermanentOne(t *testing.T) {
	var out logLines
	c := &condition{log: slog.New(slog.NewTextHandler(&out, nil)), addr: "m"}
	noauth := driver.Error("NOAUTH Authentication required.")
	for _, err := range []error{noauth, context.DeadlineExceeded, noauth, errBroken, noauth, nil, context.DeadlineExceeded} {
		c.note(err)
	}
	lines := out.lines()
	require.Len(t, lines, 3, "%q", lines)
	assert.Contains(t, lines[0], "failure=NOAUTH")
	assert.Contains(t, lines[1], "answers again")
	assert.Contains(t, lines[2], "failure=\"no reply\"")
}

// A TLS alert from the master is a failure of its own kind, which says what
// the master refused, not a master merely unreachable.
func TestFailureKind_TLS(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}, "tls: certificate required"},
		{fmt.Errorf("dial: %w", &tls.CertificateVerificationError{Err: errors.New("x509: unknown authority")}), "tls: certificate not trusted"},
		{&net.OpError{Op: "read", Err: errors.New("reset")}, "unreachable"},
	} {
		assert.Equal(t, tc.want, failureKind(tc.err), "%v", tc.err)
	}
}
