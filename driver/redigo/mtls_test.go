package redigo_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// mtlsURL returns a rediss:// URL for port with the tls_* parameters in q,
// and with userinfo ("user:password") if it is not empty.
func mtlsURL(userinfo string, port int, q url.Values) string {
	u := url.URL{Scheme: "rediss", Host: loopback(port), RawQuery: q.Encode()}
	if user, pw, ok := strings.Cut(userinfo, ":"); ok {
		u.User = url.UserPassword(user, pw)
	}
	return u.String()
}

// mtlsParams names pki's CA and the client certificate and key of
// client, which may be another PKI's.
func mtlsParams(pki, client testPKI) url.Values {
	return url.Values{
		"tls_ca_file":   {pki.CAFile},
		"tls_cert_file": {client.ClientCert},
		"tls_key_file":  {client.ClientKey},
	}
}

func TestMutualTLS_URLParameters_Connect(t *testing.T) {
	pki := newTestPKI(t, "good")
	srv := redistest.StartTLS(t, pki, "yes")
	admin, err := redis.Dial("tcp", srv.Addr(), redis.DialReadTimeout(waitLimit))
	require.NoError(t, err)
	_, err = admin.Do("ACL", "SETUSER", "alice", "on", ">"+alicePassword, "~*", "&*", "+@all")
	admin.Close()
	require.NoError(t, err)

	withName := mtlsParams(pki, pki)
	withName.Set("tls_server_name", "localhost")
	tests := []struct {
		name   string
		addr   string
		wantDB string // " db=N " in CLIENT INFO
	}{
		{"CA, certificate and key", mtlsURL("", srv.TLSPort, mtlsParams(pki, pki)), " db=0 "},
		{"and a server name", mtlsURL("", srv.TLSPort, withName), " db=0 "},
		{"with an ACL user and a database", strings.Replace(mtlsURL("alice:"+alicePassword, srv.TLSPort, mtlsParams(pki, pki)), "?", "/3?", 1), " db=3 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPool(t, tt.addr)
			info, err := redis.String(mustDo(t, p, "CLIENT", "INFO"), nil)
			require.NoError(t, err)
			assert.Contains(t, info, tt.wantDB)

			// A connection of its own, as a subscription uses, is the same.
			ctx := testCtx(t)
			own, err := redigo.Dial(ctx, p)
			require.NoError(t, err)
			defer own.Close()
			pong, err := redis.String(redis.DoContext(own, ctx, "PING"))
			require.NoError(t, err)
			assert.Equal(t, "PONG", pong)
		})
	}
}

// A server with tls-auth-clients yes refuses a client without a
// certificate its CA signed. The error says what the server said, not
// "connection reset by peer", whether it comes from the dial (AUTH) or
// from the first command.
func TestMutualTLS_BadClientCertificate_RefusedWithTheServersReason(t *testing.T) {
	pki := newTestPKI(t, "good")
	other := newTestPKI(t, "other")
	srv := redistest.StartTLS(t, pki, "yes")
	// The server's own certificate is not for client authentication.
	serverAsClient := testPKI{ClientCert: pki.CertFile, ClientKey: pki.KeyFile}

	tests := []struct {
		name     string
		userinfo string
		params   url.Values
		want     string
	}{
		{"no certificate", "", url.Values{"tls_ca_file": {pki.CAFile}}, "remote error: tls: certificate required"},
		{"no certificate, AUTH in the dial", ":pw", url.Values{"tls_ca_file": {pki.CAFile}}, "remote error: tls: certificate required"},
		{"signed by another CA", "", mtlsParams(pki, other), "remote error: tls: unknown certificate authority"},
		{"signed by another CA, AUTH in the dial", ":pw", mtlsParams(pki, other), "remote error: tls: unknown certificate authority"},
		{"not a client certificate", "", mtlsParams(pki, serverAsClient), "remote error: tls: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Several dials: the refusal races the client's first write.
			for i := range 5 {
				p := newPool(t, mtlsURL(tt.userinfo, srv.TLSPort, tt.params))
				_, err := do(testCtx(t), p, "PING")
				require.Error(t, err, "dial %d", i)
				assert.Contains(t, err.Error(), tt.want, "dial %d", i)
				assert.NotContains(t, err.Error(), "reset by peer", "dial %d", i)
				assert.NotContains(t, err.Error(), "pw", "dial %d", i)
			}
		})
	}
}

// A lock taken and released through the library's entry point, on three
// masters that demand client certificates, given as rediss:// URLs.
func TestMutualTLS_NewFromAddrs_LocksAndReleases(t *testing.T) {
	pki := newTestPKI(t, "good")
	var addrs, noCert []string
	for range 3 {
		srv := redistest.StartTLS(t, pki, "yes")
		addrs = append(addrs, mtlsURL("", srv.TLSPort, mtlsParams(pki, pki)))
		noCert = append(noCert, mtlsURL("", srv.TLSPort, url.Values{"tls_ca_file": {pki.CAFile}}))
	}
	opts := []redlock.Option{
		redlock.WithRestartGuard(0), // the masters are fresh
		redlock.WithNodeTimeout(time.Second),
		redlock.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c, err := redlock.NewFromAddrs(addrs, opts...)
	require.NoError(t, err)
	defer c.Close()
	l, err := c.TryLock(ctx, "mtls-job", 10*time.Second)
	require.NoError(t, err)
	assert.Positive(t, l.Fence())
	assert.GreaterOrEqual(t, len(l.Granted()), 2, "a quorum of 3")
	st, err := c.Inspect(ctx, "mtls-job")
	require.NoError(t, err)
	assert.True(t, st.Held())
	assert.Equal(t, l.Token(), st.Holder)

	// A client without a certificate can neither lock nor see the key.
	bare, err := redlock.NewFromAddrs(noCert, opts...)
	require.NoError(t, err)
	defer bare.Close()
	_, err = bare.TryLock(ctx, "mtls-other", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	assert.Contains(t, err.Error(), "certificate required")
	var ae *redlock.AttemptError
	require.ErrorAs(t, err, &ae)
	assert.Contains(t, ae.Detail(), "remote error: tls: certificate required")

	require.NoError(t, l.Release(ctx))
	st, err = c.Inspect(ctx, "mtls-job")
	require.NoError(t, err)
	assert.False(t, st.Held(), "still held after Release: %+v", st)
	// Release returns at a quorum; the last delete may land a moment later,
	// but well before the 10 s TTL would end a key left behind.
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err = c.Inspect(ctx, "mtls-job")
		require.NoError(t, err)
		left := 0
		for _, n := range st.Nodes {
			require.NoError(t, n.Err, "node %d", n.Node)
			if n.Holder != "" {
				left++
			}
		}
		if left == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the key is left on %d masters after Release: %+v", left, st.Nodes)
		time.Sleep(20 * time.Millisecond)
	}
}

// New reads the files at once, and its errors name the file and what is
// wrong with it, never the password or the key.
func TestMutualTLS_BadParameters_NewNamesTheFile(t *testing.T) {
	pki := newTestPKI(t, "good")
	other := newTestPKI(t, "other")
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	empty := filepath.Join(dir, "empty.pem")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	huge := filepath.Join(dir, "huge.pem")
	require.NoError(t, os.WriteFile(huge, make([]byte, 2<<20), 0o600))
	const secret = "Pw-s3cr3t"
	keyPEM, err := os.ReadFile(pki.ClientKey)
	require.NoError(t, err)
	keyBody := strings.Split(string(keyPEM), "\n")[1] // a line of the key itself

	q := func(kv ...string) url.Values {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	tests := []struct {
		name     string
		addr     string
		opts     []redigo.Option
		wantErr  []string
		notExist bool
	}{
		{"missing CA file", mtlsURL("u:"+secret, 6380, q("tls_ca_file", missing)), nil,
			[]string{`CA file "` + missing + `"`, "no such file"}, true},
		{"empty CA file", mtlsURL("u:"+secret, 6380, q("tls_ca_file", empty)), nil,
			[]string{`CA file "` + empty + `"`, "no PEM certificate"}, false},
		{"a key as the CA file", mtlsURL("u:"+secret, 6380, q("tls_ca_file", pki.ClientKey)), nil,
			[]string{`CA file "` + pki.ClientKey + `"`, "no PEM certificate"}, false},
		{"a directory as the CA file", mtlsURL("", 6380, q("tls_ca_file", dir)), nil,
			[]string{`CA file "` + dir + `"`, "not a regular file"}, false},
		{"a huge CA file", mtlsURL("", 6380, q("tls_ca_file", huge)), nil,
			[]string{`CA file "` + huge + `"`, "larger than"}, false},
		{"missing certificate file", mtlsURL("u:"+secret, 6380, q("tls_cert_file", missing, "tls_key_file", pki.ClientKey)), nil,
			[]string{`client certificate "` + missing + `"`, "no such file"}, true},
		{"missing key file", mtlsURL("u:"+secret, 6380, q("tls_cert_file", pki.ClientCert, "tls_key_file", missing)), nil,
			[]string{`client key "` + missing + `"`, "no such file"}, true},
		{"certificate without key", mtlsURL("", 6380, q("tls_cert_file", pki.ClientCert)), nil,
			[]string{`client certificate "` + pki.ClientCert + `" has no key file`}, false},
		{"key without certificate", mtlsURL("", 6380, q("tls_key_file", pki.ClientKey)), nil,
			[]string{`client key "` + pki.ClientKey + `" has no certificate file`}, false},
		{"key of another certificate", mtlsURL("u:"+secret, 6380, q("tls_cert_file", pki.ClientCert, "tls_key_file", other.ClientKey)), nil,
			[]string{`client certificate "` + pki.ClientCert + `" with key "` + other.ClientKey + `"`, "does not match"}, false},
		{"certificate and key swapped", mtlsURL("u:"+secret, 6380, q("tls_cert_file", pki.ClientKey, "tls_key_file", pki.ClientCert)), nil,
			[]string{`client certificate "` + pki.ClientKey + `"`}, false},
		{"tls parameter on a redis:// URL", "redis://:" + secret + "@127.0.0.1:6380?tls_ca_file=" + url.QueryEscape(pki.CAFile), nil,
			[]string{"tls_ca_file needs a rediss:// URL"}, false},
		{"skipping verification", "rediss://:" + secret + "@127.0.0.1:6380?tls_insecure_skip_verify=true", nil,
			[]string{`"tls_insecure_skip_verify"`, "cannot be turned off", "tls_ca_file"}, false},
		{"skip_verify as other clients spell it", "rediss://127.0.0.1:6380?skip_verify=true", nil,
			[]string{`"skip_verify"`, "cannot be turned off"}, false},
		{"WithTLS and tls parameters", mtlsURL("u:"+secret, 6380, mtlsParams(pki, pki)), []redigo.Option{redigo.WithTLS(pki.ClientTLS())},
			[]string{"both WithTLS and the URL's tls_* parameters"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := redigo.New(tt.addr, tt.opts...)
			require.Error(t, err)
			assert.Nil(t, p)
			for _, w := range tt.wantErr {
				assert.Contains(t, err.Error(), w)
			}
			assert.Equal(t, tt.notExist, errors.Is(err, fs.ErrNotExist), "matchable as fs.ErrNotExist")
			assert.NotContains(t, err.Error(), secret)
			assert.NotContains(t, err.Error(), keyBody)
		})
	}
}

// TLSParams.Config builds what the URL's parameters build, for WithTLS or
// a command's flags.
func TestTLSParams_Config(t *testing.T) {
	pki := newTestPKI(t, "good")
	srv := redistest.StartTLS(t, pki, "yes")

	cfg, err := redigo.TLSParams{CAFile: pki.CAFile, CertFile: pki.ClientCert, KeyFile: pki.ClientKey, ServerName: "localhost"}.Config()
	require.NoError(t, err)
	assert.Equal(t, "localhost", cfg.ServerName)
	assert.Len(t, cfg.Certificates, 1)
	assert.NotNil(t, cfg.RootCAs)
	p := newPool(t, srv.TLSAddr(), redigo.WithTLS(cfg))
	assert.Equal(t, "PONG", mustDo(t, p, "PING"))

	cfg, err = redigo.TLSParams{}.Config()
	require.NoError(t, err, "no files: Go's defaults, the system's roots")
	assert.Nil(t, cfg.RootCAs)
	assert.Empty(t, cfg.Certificates)

	_, err = redigo.TLSParams{CAFile: pki.CAFile, CertFile: pki.ClientCert}.Config()
	require.Error(t, err)
	assert.Equal(t, `redigo: client certificate "`+pki.ClientCert+`" has no key file: give both or neither`, err.Error())
	_, err = redigo.TLSParams{CAFile: filepath.Join(t.TempDir(), "nope.pem")}.Config()
	assert.ErrorIs(t, err, fs.ErrNotExist)
}
