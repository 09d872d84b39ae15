package redigo

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// TLSParams are the TLS settings that a rediss:// URL's tls_* parameters
// carry, for building the same configuration in code (pass the result of
// Config to WithTLS) or from command-line flags.
//
// There is deliberately no setting that turns verification off: a master
// whose certificate is not verified can be impersonated, and an impostor
// grants any lock. To trust a self-signed or private CA, name it in CAFile.
type TLSParams struct {
	// CAFile is a PEM file of the CA certificates that may sign the
	// server's certificate; they replace the system's roots. Default: the
	// system's roots.
	CAFile string
	// CertFile is a PEM file of the client's certificate, followed by any
	// intermediates, sent to a server that asks for one (Redis's default,
	// tls-auth-clients yes). It needs KeyFile. Default: none.
	CertFile string
	// KeyFile is a PEM file of CertFile's private key. It needs CertFile.
	KeyFile string
	// ServerName is the name the server's certificate must carry, when it
	// is not the address's host (as for a master reached by IP address).
	// Default: the address's host.
	ServerName string
}

// maxPEMFile bounds what is read from a certificate or key file, so that a
// wrong path (a device, a log) fails at once instead of filling memory.
const maxPEMFile = 1 << 20

// Config reads the files and returns a client configuration with Go's
// defaults otherwise (TLS 1.2 or later). The files are read once, here: a
// rotated certificate needs a new configuration. Errors name the file and
// never show its content.
func (p TLSParams) Config() (*tls.Config, error) {
	cfg, err := p.config()
	if err != nil {
		return nil, fmt.Errorf("redigo: %w", err)
	}
	return cfg, nil
}

func (p TLSParams) isZero() bool { return p == TLSParams{} }

// config is Config without the package's prefix, for errors that already
// name the address.
func (p TLSParams) config() (*tls.Config, error) {
	switch {
	case p.CertFile != "" && p.KeyFile == "":
		return nil, fmt.Errorf("client certificate %q has no key file: give both or neither", p.CertFile)
	case p.KeyFile != "" && p.CertFile == "":
		return nil, fmt.Errorf("client key %q has no certificate file: give both or neither", p.KeyFile)
	}
	cfg := &tls.Config{ServerName: p.ServerName}
	if p.CAFile != "" {
		pem, err := readPEMFile(p.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CA file %q: %w", p.CAFile, err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %q: no PEM certificate in it", p.CAFile)
		}
		cfg.RootCAs = roots
	}
	if p.CertFile != "" {
		certPEM, err := readPEMFile(p.CertFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate %q: %w", p.CertFile, err)
		}
		keyPEM, err := readPEMFile(p.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client key %q: %w", p.KeyFile, err)
		}
		// X509KeyPair's errors describe what is wrong, never the bytes.
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("client certificate %q with key %q: %w", p.CertFile, p.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// readPEMFile reads a regular file of at most maxPEMFile bytes. Its errors
// leave out the path, which the caller names.
func readPEMFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, unwrapPath(err)
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPEMFile+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if len(b) > maxPEMFile {
		return nil, fmt.Errorf("larger than %d bytes: not a PEM file", maxPEMFile)
	}
	return b, nil
}

// unwrapPath drops the path from an *fs.PathError, keeping its cause
// matchable (errors.Is(err, fs.ErrNotExist)).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
