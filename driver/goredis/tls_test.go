package goredis_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// The client's TLS configuration is the lock's: with mutual TLS the lock
// works through the adapter, and a master the client cannot verify fails
// the call with the verification error.
func TestTLS_TheClientsConfigurationIsUsed(t *testing.T) {
	pki := redistest.NewPKI(t, "goredis")
	addr := redistest.StartTLS(t, pki, "yes").TLSAddr()
	cert, err := tls.LoadX509KeyPair(pki.ClientCert, pki.ClientKey)
	require.NoError(t, err)
	good := pki.ClientTLS()
	good.Certificates = []tls.Certificate{cert}
	other := redistest.NewPKI(t, "other")

	for _, tc := range []struct {
		name string
		cfg  *tls.Config
		ok   bool
	}{
		{"mutual TLS", good, true},
		{"another CA", &tls.Config{RootCAs: other.Roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := wrap(t, addr, redis.Options{TLSConfig: tc.cfg, ContextTimeoutEnabled: true})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := driver.Eval(ctx, m, driver.Call{Script: driver.NewScript("one", `return 1`), Keys: []string{"k"}})
			if !tc.ok {
				var verr *tls.CertificateVerificationError
				var unknown x509.UnknownAuthorityError
				assert.True(t, errors.As(err, &verr) || errors.As(err, &unknown), "%T %v", err, err)
				return
			}
			require.NoError(t, err)
			sub, err := m.Subscribe(ctx)
			require.NoError(t, err)
			require.NoError(t, sub.Close())
			c, err := redlock.New([]driver.Master{m}, redlock.WithRestartGuard(0))
			require.NoError(t, err)
			defer c.Close()
			lock, err := c.TryLock(ctx, "k", 10*time.Second)
			require.NoError(t, err)
			require.NoError(t, lock.Release(ctx))
		})
	}
}
