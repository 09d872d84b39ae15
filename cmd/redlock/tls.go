package main

import (
	"crypto/tls"
	"flag"
	"net/url"
	"strings"

	"github.com/quorumlock/quorumlock/driver/redigo"
)

// tlsFlags are the flags that reach every master over TLS: the same
// settings as a rediss:// URL's tls_* parameters, once for all masters.
type tlsFlags struct {
	on     bool
	params redigo.TLSParams
}

func (t *tlsFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&t.on, "tls", false, "reach every master over TLS, verifying its certificate against the system's roots (or --tls-ca-file) and its host name (or --tls-server-name); there is no flag to skip verification")
	fs.StringVar(&t.params.CAFile, "tls-ca-file", "", "PEM `file` of the CA certificates that sign the masters' certificates, instead of the system's roots; implies --tls")
	fs.StringVar(&t.params.CertFile, "tls-cert-file", "", "PEM `file` of a client certificate, for masters with tls-auth-clients yes (Redis's default); needs --tls-key-file; implies --tls")
	fs.StringVar(&t.params.KeyFile, "tls-key-file", "", "PEM `file` of the client certificate's private key; implies --tls")
	fs.StringVar(&t.params.ServerName, "tls-server-name", "", "the `name` every master's certificate must carry, when it is not the host in --nodes; implies --tls")
}

// config returns the TLS configuration the flags ask for, or nil for none,
// having read the files once for all masters.
func (t *tlsFlags) config() (*tls.Config, error) {
	if !t.on && t.params == (redigo.TLSParams{}) {
		return nil, nil
	}
	cfg, err := t.params.Config()
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return cfg, nil
}

// setsTLS reports whether addr is a URL with tls_* parameters of its own,
// which cannot be combined with the flags.
func setsTLS(addr string) bool {
	u, err := url.Parse(strings.TrimSpace(addr))
	if err != nil {
		return false // redigo.New reports it
	}
	for k := range u.Query() {
		if strings.HasPrefix(k, "tls_") {
			return true
		}
	}
	return false
}
