package rueidisdriver_test

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/driver"
	rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// The client's own options are the lock's: an ACL user, a password, a
// database and TLS (mutual, here) set on the rueidis client reach the
// master. The lock takes and releases a key
// through each, and the key is where the options say.
func TestClientOptions_AreTheLocks(t *testing.T) {
	pki := redistest.NewPKI(t, "rueidis")
	srv := redistest.StartTLS(t, pki, "yes")
	_, err := srv.Do("ACL", "SETUSER", "locker", "on", ">lockpw", "~*", "&*", "+@all")
	require.NoError(t, err)
	clientTLS := pki.ClientTLS()
	cert, err := tlsKeyPair(pki)
	require.NoError(t, err)
	clientTLS.Certificates = cert

	tests := []struct {
		name string
		opt  rueidis.ClientOption
		db   string // where the key lands
	}{
		{"ACL user", rueidis.ClientOption{InitAddress: []string{srv.Addr()}, Username: "locker", Password: "lockpw"}, "0"},
		{"database", rueidis.ClientOption{InitAddress: []string{srv.Addr()}, SelectDB: 3}, "3"},
		{"mutual TLS", rueidis.ClientOption{InitAddress: []string{srv.TLSAddr()}, TLSConfig: clientTLS}, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt := tt.opt
			opt.DisableCache = true
			client, err := rueidis.NewClient(opt)
			require.NoError(t, err)
			defer client.Close()
			m, err := rueidisdriver.New(client)
			require.NoError(t, err)
			c, err := redlock.New([]driver.Master{m}, redlock.WithCloseDrivers(), redlock.WithRestartGuard(0), redlock.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			require.NoError(t, err)
			defer c.Close()
			key := "opt-" + tt.name
			l, err := c.TryLock(ctxFor(t, 5*time.Second), key, 10*time.Second)
			require.NoError(t, err)
			for _, db := range []string{"0", "3"} {
				n, err := redistest.DoAt(srv.Addr(), "EVAL", "redis.call('SELECT', ARGV[1]); return redis.call('EXISTS', KEYS[1])", "1", key, db)
				require.NoError(t, err)
				want := map[bool]string{true: "1", false: "0"}[db == tt.db]
				assert.Equal(t, want, n, "key in database %s", db)
			}
			require.NoError(t, l.Release(ctxFor(t, 5*time.Second)))
		})
	}
}

// A master that requires a password refuses a client without one: the
// client cannot be built, as rueidis connects at once, and no lock is taken
// with a wrong one.
func TestClientOptions_NoPassword(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral, "--requirepass", "secret")[0]
	before := goleak.IgnoreCurrent()
	_, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NOAUTH")
	_, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true, Password: "wrong"})
	require.Error(t, err)
	var re *rueidis.RedisError
	assert.True(t, errors.As(err, &re), "%T %v", err, err)
	// A client that failed to build leaves a goroutine of rueidis' behind,
	// a cluster refresh it put off by about a second; wait for it to end.
	require.Eventually(t, func() bool { return goleak.Find(before) == nil }, 5*time.Second, 100*time.Millisecond)
}

// tlsKeyPair loads the PKI's client certificate.
func tlsKeyPair(pki redistest.PKI) ([]tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(pki.ClientCert, pki.ClientKey)
	if err != nil {
		return nil, err
	}
	return []tls.Certificate{cert}, nil
}
