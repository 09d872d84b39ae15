package redigo_test

import (
	"crypto/tls"
	"strconv"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// testPKI is a throwaway CA, a server certificate it signed for 127.0.0.1
// and localhost, and a client certificate it signed, written as PEM files.
type testPKI = redistest.PKI

func newTestPKI(t *testing.T, name string) testPKI { return redistest.NewPKI(t, name) }

// tlsServer is a redis-server with a TLS port beside the plain one.
type tlsServer = redistest.TLSServer

// startTLSRedis starts a redis-server serving TLS with pki's certificate,
// not asking clients for one.
func startTLSRedis(t *testing.T, pki testPKI) tlsServer {
	t.Helper()
	return redistest.StartTLS(t, pki, "no")
}

func TestTLS_Connects(t *testing.T) {
	pki := newTestPKI(t, "good")
	srv := startTLSRedis(t, pki)
	port := strconv.Itoa(srv.TLSPort)

	tests := []struct {
		name string
		addr string
		opts []redigo.Option
	}{
		{"WithTLS on host:port", srv.TLSAddr(), []redigo.Option{redigo.WithTLS(pki.ClientTLS())}},
		{"rediss URL with roots", "rediss://127.0.0.1:" + port, []redigo.Option{redigo.WithTLS(pki.ClientTLS())}},
		{"redis URL with WithTLS", "redis://127.0.0.1:" + port, []redigo.Option{redigo.WithTLS(pki.ClientTLS())}},
		{"server name from a DNS host", "rediss://localhost:" + port, []redigo.Option{redigo.WithTLS(pki.ClientTLS())}},
		{"explicit server name", srv.TLSAddr(), []redigo.Option{redigo.WithTLS(&tls.Config{RootCAs: pki.Roots, ServerName: "localhost"})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPool(t, tt.addr, tt.opts...)
			ctx := testCtx(t)
			pong, err := redis.String(p.Do(ctx, "PING"))
			require.NoError(t, err)
			assert.Equal(t, "PONG", pong)

			own, err := redigo.Dial(ctx, p)
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
	cfg := pki.ClientTLS()
	p := newPool(t, srv.TLSAddr(), redigo.WithTLS(cfg))
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

	p := newPool(t, "rediss://alice:"+alicePassword+"@127.0.0.1:"+strconv.Itoa(srv.TLSPort)+"/2", redigo.WithTLS(pki.ClientTLS()))
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
		opts []redigo.Option
	}{
		// The system roots do not know the test CA: this also shows that
		// rediss:// alone turns TLS on and verifies.
		{"rediss URL with system roots", "rediss://" + srv.TLSAddr(), nil},
		{"untrusted CA", srv.TLSAddr(), []redigo.Option{redigo.WithTLS(other.ClientTLS())}},
		{"wrong server name", srv.TLSAddr(), []redigo.Option{redigo.WithTLS(&tls.Config{RootCAs: pki.Roots, ServerName: "db.example.com"})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The first verification against the system's roots loads them,
			// which can take over the default second on a loaded machine.
			p := newPool(t, tt.addr, append(tt.opts, redigo.WithDialTimeout(waitLimit))...)
			_, err := p.Do(testCtx(t), "PING")
			require.Error(t, err)
			var verr *tls.CertificateVerificationError
			assert.ErrorAs(t, err, &verr)
			assert.Zero(t, redigo.Dials(p))
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
		p := newPool(t, srv.Addr(), redigo.WithTLS(pki.ClientTLS()))
		_, err := p.Do(testCtx(t), "PING")
		assert.Error(t, err)
		assert.Zero(t, redigo.Dials(p))
	})
}
