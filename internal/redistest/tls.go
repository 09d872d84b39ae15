package redistest

import (
	"net"
	"strconv"
	"testing"
)

// TLSServer is a server that StartTLS started: a TLS port beside the plain
// one.
type TLSServer struct {
	*Server
	TLSPort int
}

// TLSAddr returns "127.0.0.1:tlsport".
func (s TLSServer) TLSAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.TLSPort)) }

// StartTLS starts one server as Start does, serving TLS with pki's server
// certificate on a port of its own. The plain port stays open: Start waits
// for a server with a plain-text PING. authClients is tls-auth-clients:
// "yes" (Redis's default) refuses a client without a certificate that pki's
// CA signed; "optional" and "no" do not.
//
// A redis-server built without TLS support cannot start with these
// arguments: the test then fails, saying so, rather than skip.
func StartTLS(tb testing.TB, pki PKI, authClients string) TLSServer {
	tb.Helper()
	started := false
	defer func() {
		if !started {
			tb.Errorf("redistest: redis-server did not start with --tls-port: it may be built without TLS " +
				"support (BUILD_TLS=yes); the TLS tests need a redis-server that has it")
		}
	}()
	port, err := FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	srv := Start(tb, 1, Ephemeral,
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", pki.CertFile,
		"--tls-key-file", pki.KeyFile,
		"--tls-ca-cert-file", pki.CAFile,
		"--tls-auth-clients", authClients,
	)[0]
	started = true
	return TLSServer{Server: srv, TLSPort: port}
}
