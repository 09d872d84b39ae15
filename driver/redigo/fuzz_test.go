package redigo_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/driver/redigo"
)

// fuzzSecret is put in the user information of URLs built from the fuzzed
// input; New's errors must never show it.
const fuzzSecret = "Fz9pw"

// FuzzNew checks that New never panics, that a driver it returns has a
// dialable "host:port", and that its errors never show a password. The seed
// corpus runs in every plain go test.
func FuzzNew(f *testing.F) {
	for _, s := range []string{
		"", " ", "localhost:6379", "127.0.0.1:1", "[::1]:6379", "::1", ":6379", "h:", "h:0", "h:65536", "h:+1",
		"redis://h", "rediss://h:6380/2", "redis://u:p@h:1/3?db=4", "redis://p@h", "redis://:p@h",
		"redis://h?dial_timeout=1s&read_timeout=2s&write_timeout=3s&pipeline_conns=4",
		"redis://h?dial_timeout=-1s", "redis://h?x=1", "redis://h/%zz", "redis://h/-1", "redis://[::1]:7000",
		"redis://[::1", "redis://h:1#f", "redis:///", "redis://@", "redis://a@b@c", "http://h", "://h",
		"redis://h/99999999999999999999", "redis://h?db=99999999999999999999", "\x00", "redis://h\x7f",
		"rediss://h?tls_server_name=x", "redis://h?tls_server_name=x", "rediss://h?tls_ca_file=%00", "rediss://h?tls_cert_file=a",
		"rediss://u:p@h?tls_ca_file=/nonexistent&tls_cert_file=/a&tls_key_file=/b", "rediss://h?skip_verify=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		p, err := redigo.New(addr)
		if err == nil {
			checkDialable(t, addr, p.Addr())
			if err := p.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
		if strings.Contains(addr, fuzzSecret) {
			return
		}
		for _, a := range []string{
			"redis://user:" + fuzzSecret + "@" + addr,
			"rediss://" + fuzzSecret + "@" + addr, // a lone user part is the password
			"redis://:" + fuzzSecret + "@" + addr,
			"user:" + fuzzSecret + "@" + addr, // the scheme forgotten
		} {
			p, err := redigo.New(a)
			if err == nil {
				checkDialable(t, a, p.Addr())
				p.Close()
				continue
			}
			if strings.Contains(err.Error(), fuzzSecret) {
				t.Fatalf("New(%q): the error shows the password: %v", a, err)
			}
		}
	})
}

func checkDialable(t *testing.T, addr, got string) {
	t.Helper()
	host, port, err := net.SplitHostPort(got)
	if err != nil {
		t.Fatalf("New(%q).Addr() = %q: %v", addr, got, err)
	}
	if host == "" {
		t.Fatalf("New(%q).Addr() = %q: no host", addr, got)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		t.Fatalf("New(%q).Addr() = %q: port %q is not a plain number in 1-65535", addr, got, port)
	}
}
