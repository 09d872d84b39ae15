package redlock

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

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
