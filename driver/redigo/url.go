package redigo

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// parseAddr fills c from "host:port" or a redis:// or rediss:// URL.
//
// Errors show addr only through redact, and never quote a part of it that
// could hold a password.
func parseAddr(addr string, c *config) error {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return fmt.Errorf("redigo: empty address")
	}
	if !strings.Contains(addr, "://") {
		return parseHostPort(addr, c)
	}
	return parseURL(addr, c)
}

func parseHostPort(addr string, c *config) error {
	if strings.Contains(addr, "@") {
		return fmt.Errorf("redigo: address %q: user information needs a redis:// URL", redact(addr))
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		msg := err.Error()
		var ae *net.AddrError
		if errors.As(err, &ae) {
			msg = ae.Err // without the address, which redact shows
		}
		return fmt.Errorf("redigo: address %q: want host:port or a redis:// URL: %s", redact(addr), msg)
	}
	if err := checkHost(host); err != nil {
		return fmt.Errorf("redigo: address %q: %v", redact(addr), err)
	}
	port, err = checkPort(port)
	if err != nil {
		return fmt.Errorf("redigo: address %q: %v", redact(addr), err)
	}
	c.addr = net.JoinHostPort(host, port)
	return nil
}

func parseURL(addr string, c *config) error {
	// The user information ends at the last '@'. If a '/', '?' or '#' comes
	// before it, url.Parse would cut a password there and read the rest as
	// host, port or path, and the errors would quote it.
	rest := addr[strings.Index(addr, "://")+len("://"):]
	if at := strings.LastIndex(rest, "@"); at >= 0 && strings.ContainsAny(rest[:at], "/?#") {
		return fmt.Errorf("redigo: address %q: escape '/', '?' and '#' in the user information as %%2F, %%3F and %%23", redact(addr))
	}
	u, err := url.Parse(addr)
	if err != nil {
		if strings.Contains(addr, "@") {
			// url.Parse's own message may quote a part of the password.
			return fmt.Errorf("redigo: address %q: not a valid URL", redact(addr))
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which redact shows
		}
		return fmt.Errorf("redigo: address %q: %v", redact(addr), err)
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		c.useTLS = true
	case "redis+cluster", "rediss+cluster":
		return fmt.Errorf("redigo: address %q: a Redis Cluster's URL is for Open or NewCluster, not New", redact(addr))
	default:
		return fmt.Errorf("redigo: address %q: scheme %q is not redis or rediss", redact(addr), u.Scheme)
	}
	host, port := u.Hostname(), u.Port()
	if err := checkHost(host); err != nil {
		return fmt.Errorf("redigo: address %q: %v", redact(addr), err)
	}
	if port == "" {
		port = "6379"
	}
	port, err = checkPort(port)
	if err != nil {
		return fmt.Errorf("redigo: address %q: %v", redact(addr), err)
	}
	c.addr = net.JoinHostPort(host, port)
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			c.username, c.password = u.User.Username(), pw
		} else {
			// redis://secret@host: a lone user part is the password, as
			// redis-cli and most clients read it.
			c.password = u.User.Username()
		}
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		db, err := strconv.Atoi(p)
		if err != nil || db < 0 {
			return fmt.Errorf("redigo: address %q: database %q is not a non-negative integer", redact(addr), p)
		}
		c.db = db
	}
	q := u.Query()
	// In a fixed order, so that the same address always gives the same error.
	for _, k := range slices.Sorted(maps.Keys(q)) {
		vs := q[k]
		v := vs[len(vs)-1]
		var err error
		switch k {
		case "dial_timeout":
			c.dialTimeout, err = time.ParseDuration(v)
		case "read_timeout":
			c.readTimeout, err = time.ParseDuration(v)
		case "write_timeout":
			c.writeTimeout, err = time.ParseDuration(v)
		case "db":
			c.db, err = strconv.Atoi(v)
		case "pipeline_conns":
			c.pipeConns, err = strconv.Atoi(v)
		case "tls_ca_file":
			c.tlsParams.CAFile = v
		case "tls_cert_file":
			c.tlsParams.CertFile = v
		case "tls_key_file":
			c.tlsParams.KeyFile = v
		case "tls_server_name":
			c.tlsParams.ServerName = v
		default:
			if isSkipVerify(k) {
				return fmt.Errorf("redigo: address %q: parameter %q: verification of the server cannot be turned off from a URL, "+
					"since an unverified master can be impersonated and grant any lock; trust its CA with tls_ca_file=FILE", redact(addr), k)
			}
			return fmt.Errorf("redigo: address %q: unknown parameter %q", redact(addr), k)
		}
		if strings.HasPrefix(k, "tls_") && !c.useTLS {
			// Most likely a missing 's': without it the password and
			// every lock would cross the network in the clear.
			return fmt.Errorf("redigo: address %q: parameter %s needs a rediss:// URL", redact(addr), k)
		}
		if err != nil {
			return fmt.Errorf("redigo: address %q: parameter %s=%q: %v", redact(addr), k, v, err)
		}
	}
	return nil
}

// isSkipVerify reports whether a parameter's name asks to skip verifying the
// server's certificate, as some clients' URLs allow.
func isSkipVerify(k string) bool {
	k = strings.ToLower(k)
	return strings.Contains(k, "insecure") || strings.Contains(k, "skip_verify")
}

// checkHost refuses a host that no dialer takes: it must be a DNS name or an
// IPv4 address (ASCII letters, digits, '-', '.', '_') or an IPv6 address.
// The host never holds a password: the caller has cut any user information.
func checkHost(h string) error {
	if h == "" {
		return errors.New("no host")
	}
	if strings.Contains(h, ":") {
		if _, err := netip.ParseAddr(h); err != nil {
			return fmt.Errorf("host %q is not an IPv6 address", h)
		}
		return nil
	}
	for _, r := range h {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '.' || r == '_') {
			return fmt.Errorf("host %q: %q is not allowed in a host name", h, r)
		}
	}
	return nil
}

// checkPort returns p as a plain decimal in 1-65535, or an error. It refuses
// what strconv.Atoi would take but a dialer would not, such as "+80".
func checkPort(p string) (string, error) {
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n < 1 {
		return "", fmt.Errorf("port %q is not in 1-65535", p)
	}
	return strconv.FormatUint(n, 10), nil
}

// redact hides the user information of addr, which may hold a password: all
// of it, from after the scheme to the last '@', whether addr is a valid URL
// or not.
func redact(addr string) string {
	start := 0
	if i := strings.Index(addr, "://"); i > 0 && isScheme(addr[:i]) {
		start = i + len("://")
	}
	at := strings.LastIndex(addr, "@")
	if at < start {
		return addr
	}
	return addr[:start] + "xxxxx" + addr[at:]
}

// isScheme reports whether s is a URL scheme as RFC 3986 spells it.
func isScheme(s string) bool {
	for i, r := range s {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case i > 0 && ('0' <= r && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}
