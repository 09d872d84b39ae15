package redistest

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
	"testing"
	"time"
)

// PKI is a throwaway CA, a server certificate it signed for 127.0.0.1 and
// localhost, and a client certificate it signed, written as PEM files in a
// directory removed with the test.
type PKI struct {
	CAFile                string // the CA's certificate
	CertFile, KeyFile     string // the server's certificate and key
	ClientCert, ClientKey string // the client's certificate and key
	Roots                 *x509.CertPool
}

// NewPKI makes a PKI whose certificates name name. It fails tb on error.
func NewPKI(tb testing.TB, name string) PKI {
	tb.Helper()
	dir := tb.TempDir()
	now := time.Now()
	must := func(err error) {
		if err != nil {
			tb.Fatalf("redistest: making a test PKI: %v", err)
		}
	}
	write := func(file, typ string, der []byte) string {
		path := filepath.Join(dir, file)
		must(os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return path
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
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
	must(err)
	ca, err := x509.ParseCertificate(caDER)
	must(err)
	// issue signs a certificate for tmpl with the CA and writes it and its key.
	issue := func(tmpl *x509.Certificate, certFile, keyFile string) (string, string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(err)
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		must(err)
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		must(err)
		return write(certFile, "CERTIFICATE", der), write(keyFile, "PRIVATE KEY", keyDER)
	}
	p := PKI{CAFile: write("ca.pem", "CERTIFICATE", caDER), Roots: x509.NewCertPool()}
	p.Roots.AddCert(ca)
	p.CertFile, p.KeyFile = issue(&x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "redis"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, "server.pem", "server-key.pem")
	p.ClientCert, p.ClientKey = issue(&x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: name + " locker"},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, "client.pem", "client-key.pem")
	return p
}

// ClientTLS returns a client configuration that trusts the PKI's CA.
func (p PKI) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: p.Roots, MinVersion: tls.VersionTLS12}
}
