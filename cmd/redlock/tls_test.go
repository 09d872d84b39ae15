package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// testPKI is a throwaway CA with a server certificate for 127.0.0.1 and
// localhost and a client certificate that it signed, as PEM files.
type testPKI = redistest.PKI

func newTestPKI(t *testing.T, name string) testPKI { return redistest.NewPKI(t, name) }

// tlsMasters starts n redis-servers that serve TLS with pki's server
// certificate and, as Redis does by default, demand a client certificate
// that pki's CA signed. It returns the --nodes value naming their TLS ports.
// redistest checks a server with a plain PING, so the plain ports stay open.
func tlsMasters(t *testing.T, n int, pki testPKI) string {
	t.Helper()
	var addrs []string
	for range n {
		addrs = append(addrs, redistest.StartTLS(t, pki, "yes").TLSAddr())
	}
	return strings.Join(addrs, ",")
}

// tlsArgs are the flags that give pki's CA, and client's certificate and
// key, to the command.
func tlsArgs(pki, client testPKI) []string {
	return []string{"--tls-ca-file", pki.CAFile, "--tls-cert-file", client.ClientCert, "--tls-key-file", client.ClientKey}
}

func TestTLSFlags_MutualTLS_RunAndStatusOnEveryMaster(t *testing.T) {
	pki := newTestPKI(t, "good")
	nodes := tlsMasters(t, 3, pki)
	common := []string{"--nodes", nodes, "--restart-guard", "0", "--node-timeout", "500ms"}
	status := func(extra ...string) result {
		return bin.run(t, nil, append(append(append([]string{"status"}, common...), extra...), "tls-job")...)
	}

	r := status(tlsArgs(pki, pki)...)
	require.Equal(t, 0, r.code, "%v", r)
	assert.Contains(t, r.stdout, `key "tls-job": FREE`)
	assert.Equal(t, 3, strings.Count(r.stdout, " yes "), "every master answered\n%v", r)

	dir := t.TempDir()
	env, argv := helper(t, "interval", dir, helperSleep+"=10ms")
	args := append(append(append([]string{"run"}, common...), tlsArgs(pki, pki)...), "--key", "tls-job")
	r = bin.run(t, env, append(args, argv...)...)
	require.Equal(t, 0, r.code, "%v", r)
	raw, err := os.ReadFile(filepath.Join(dir, "intervals"))
	require.NoError(t, err, "the command did not run under the lock\n%v", r)
	f := strings.Fields(string(raw))
	require.Len(t, f, 3)
	fence, err := strconv.ParseInt(f[2], 10, 64)
	require.NoError(t, err)
	assert.Positive(t, fence, "REDLOCK_FENCE")

	// Released when the command ended. (Release returns at a quorum, so a
	// straggling delete may still be on its way to one master.) The server
	// name given is checked instead of the host in --nodes.
	r = status(append(tlsArgs(pki, pki), "--tls-server-name", "localhost")...)
	require.Equal(t, 0, r.code, "%v", r)
	assert.Regexp(t, `key "tls-job": (FREE|NOT HELD)`, r.stdout)
	assert.Equal(t, 3, strings.Count(r.stdout, " yes "), "every master answered\n%v", r)
}

// The masters refuse a client without a certificate their CA signed, and
// the client refuses masters it cannot verify; the command says which.
func TestTLSFlags_BadCertificates_Refused(t *testing.T) {
	pki := newTestPKI(t, "good")
	other := newTestPKI(t, "other")
	nodes := tlsMasters(t, 3, pki)
	tests := []struct {
		name string
		tls  []string
		says string
	}{
		{"no client certificate", []string{"--tls-ca-file", pki.CAFile}, "tls: certificate required"},
		{"signed by another CA", tlsArgs(pki, other), "tls: unknown certificate authority"},
		{"server certificate not for --tls-server-name", append(tlsArgs(pki, pki), "--tls-server-name", "db.example.com"), "not db.example.com"},
		{"server certificate from another CA", tlsArgs(other, pki), "certificate signed by unknown authority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "--nodes", nodes, "--restart-guard", "0", "--node-timeout", "500ms", "--key", "k"}, tt.tls...)
			r := bin.run(t, nil, append(args, "--", "true")...)
			assert.Equal(t, exitError, r.code, "%v", r)
			if lines := r.stderrLines(); assert.Len(t, lines, 1, "%v", r) {
				assert.Contains(t, lines[0], tt.says)
				assert.NotContains(t, lines[0], "reset by peer")
			}
		})
	}
}
