package pool_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/pool"
)

// testPKI is a throwaway CA, a server certificate it signed for 127.0.0.1
// and localhost, and a client certificate it signed, written as PEM files.
type testPKI struct {
	caFile, certFile, keyFile string
	clientCert, clientKey     string
	roots                     *x509.CertPool
}

func newTestPKI(t *testing.T, name string) testPKI {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name + " test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "redis"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)

	clientKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	clientTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: name + " locker"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	clientDER, err := x509.CreateCertificate(rand.Reader, clientTmpl, ca, &clientKey.PublicKey, caKey)
	require.NoError(t, err)
	clientKeyDER, err := x509.MarshalPKCS8PrivateKey(clientKey)
	require.NoError(t, err)

	pki := testPKI{
		caFile:     filepath.Join(dir, "ca.pem"),
		certFile:   filepath.Join(dir, "server.pem"),
		keyFile:    filepath.Join(dir, "server-key.pem"),
		clientCert: filepath.Join(dir, "client.pem"),
		clientKey:  filepath.Join(dir, "client-key.pem"),
		roots:      x509.NewCertPool(),
	}
	pki.roots.AddCert(ca)
	writePEM(t, pki.caFile, "CERTIFICATE", caDER)
	writePEM(t, pki.certFile, "CERTIFICATE", der)
	writePEM(t, pki.keyFile, "PRIVATE KEY", keyDER)
	writePEM(t, pki.clientCert, "CERTIFICATE", clientDER)
	writePEM(t, pki.clientKey, "PRIVATE KEY", clientKeyDER)
	return pki
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

// clientTLS returns a client configuration that trusts pki's CA.
func (pki testPKI) clientTLS() *tls.Config {
	return &tls.Config{RootCAs: pki.roots, MinVersion: tls.VersionTLS12}
}

// tlsServer is a redis-server with a TLS port beside the plain one.
type tlsServer struct {
	*redistest.Server
	TLSPort int
}

func (s tlsServer) TLSAddr() string { return loopback(s.TLSPort) }

// startTLSRedis starts a redis-server serving TLS with pki's certificate.
// redistest waits for a server with a plain-text PING, so the plain port
// stays open; the tests use the TLS port.
//
// A redis-server built without TLS support cannot start with these
// arguments: the test then fails, saying so, rather than skip.
func startTLSRedis(t *testing.T, pki testPKI) tlsServer {
	t.Helper()
	return startTLSRedisAuth(t, pki, "no")
}

// startTLSRedisAuth is startTLSRedis with tls-auth-clients set to authClients:
// "yes" (Redis's default) refuses a client without a certificate that pki's
// CA signed.
func startTLSRedisAuth(t *testing.T, pki testPKI, authClients string) tlsServer {
	t.Helper()
	bin, err := redistest.Binary()
	require.NoError(t, err)
	started := false
	defer func() {
		if !started {
			t.Errorf("%s did not start with --tls-port: it may be built without TLS support "+
				"(BUILD_TLS=yes); the TLS tests need a redis-server that has it", bin)
		}
	}()
	port := freePort(t)
	srv := redistest.Start(t, 1, redistest.Ephemeral,
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", pki.certFile,
		"--tls-key-file", pki.keyFile,
		"--tls-ca-cert-file", pki.caFile,
		"--tls-auth-clients", authClients,
	)[0]
	started = true
	return tlsServer{Server: srv, TLSPort: port}
}

func TestTLS_Connects(t *testing.T) {
	pki := newTestPKI(t, "good")
	srv := startTLSRedis(t, pki)
	port := strconv.Itoa(srv.TLSPort)

	tests := []struct {
		name string
		addr string
		opts []pool.Option
	}{
		{"WithTLS on host:port", srv.TLSAddr(), []pool.Option{pool.WithTLS(pki.clientTLS())}},
		{"rediss URL with roots", "rediss://127.0.0.1:" + port, []pool.Option{pool.WithTLS(pki.clientTLS())}},
		{"redis URL with WithTLS", "redis://127.0.0.1:" + port, []pool.Option{pool.WithTLS(pki.clientTLS())}},
		{"server name from a DNS host", "rediss://localhost:" + port, []pool.Option{pool.WithTLS(pki.clientTLS())}},
		{"explicit server name", srv.TLSAddr(), []pool.Option{pool.WithTLS(&tls.Config{RootCAs: pki.roots, ServerName: "localhost"})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPool(t, tt.addr, tt.opts...)
			ctx := testCtx(t)
			conn, err := p.Get(ctx)
			require.NoError(t, err)
			defer conn.Close()
			pong, err := redis.String(redis.DoContext(conn, ctx, "PING"))
			require.NoError(t, err)
			assert.Equal(t, "PONG", pong)

			own, err := p.Dial(ctx)
			require.NoError(t, err)
			defer own.Close()
			_, err = redis.DoContext(own, ctx, "PING")
			assert.NoError(t, err)
		})
	}
}

func TestTLS_ConfigIsNotModified(t *testing.T) {
	pki := newTestPKI(t, "good")
	srv := startTLSRedis(t, pki)
	cfg := pki.clientTLS()
	p := newPool(t, srv.TLSAddr(), pool.WithTLS(cfg))
	mustDo(t, p, "PING")
	assert.Empty(t, cfg.ServerName, "the caller's tls.Config was changed")
}

func TestTLS_AuthAndDBOverTLS(t *testing.T) {
	pki := newTestPKI(t, "good")
	srv := startTLSRedis(t, pki)
	conn, err := redis.Dial("tcp", srv.Addr(), redis.DialReadTimeout(waitLimit))
	require.NoError(t, err)
	_, err = conn.Do("ACL", "SETUSER", "alice", "on", ">"+alicePassword, "~*", "&*", "+@all")
	conn.Close()
	require.NoError(t, err)

	p := newPool(t, "rediss://alice:"+alicePassword+"@127.0.0.1:"+strconv.Itoa(srv.TLSPort)+"/2", pool.WithTLS(pki.clientTLS()))
	info, err := redis.String(mustDo(t, p, "CLIENT", "INFO"), nil)
	require.NoError(t, err)
	assert.Contains(t, info, " db=2 ")
	assert.Contains(t, info, " user=alice ")
}

func TestTLS_RefusesWhatItCannotVerify(t *testing.T) {
	pki := newTestPKI(t, "good")
	other := newTestPKI(t, "other")
	srv := startTLSRedis(t, pki)

	tests := []struct {
		name string
		addr string
		opts []pool.Option
	}{
		// The system roots do not know the test CA: this also shows that
		// rediss:// alone turns TLS on and verifies.
		{"rediss URL with system roots", "rediss://" + srv.TLSAddr(), nil},
		{"untrusted CA", srv.TLSAddr(), []pool.Option{pool.WithTLS(other.clientTLS())}},
		{"wrong server name", srv.TLSAddr(), []pool.Option{pool.WithTLS(&tls.Config{RootCAs: pki.roots, ServerName: "db.example.com"})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The first verification against the system's roots loads them,
			// which can take over the default second on a loaded machine.
			p := newPool(t, tt.addr, append(tt.opts, pool.WithDialTimeout(waitLimit))...)
			_, err := p.Get(testCtx(t))
			require.Error(t, err)
			var verr *tls.CertificateVerificationError
			assert.ErrorAs(t, err, &verr)
			assert.Zero(t, p.Dials())
		})
	}
}

func TestTLS_PlainAndTLSPortsDoNotMix(t *testing.T) {
	pki := newTestPKI(t, "good")
	srv := startTLSRedis(t, pki)

	t.Run("plain client on the TLS port", func(t *testing.T) {
		p := newPool(t, srv.TLSAddr())
		_, err := do(testCtx(t), p, "PING")
		assert.Error(t, err)
	})
	t.Run("TLS client on the plain port", func(t *testing.T) {
		p := newPool(t, srv.Addr(), pool.WithTLS(pki.clientTLS()))
		_, err := p.Get(testCtx(t))
		assert.Error(t, err)
		assert.Zero(t, p.Dials())
	})
}
