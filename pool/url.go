package pool

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// parseAddr fills c from "host:port" or a redis:// or rediss:// URL.
func parseAddr(addr string, c *config) error {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return fmt.Errorf("pool: empty address")
	}
	if !strings.Contains(addr, "://") {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("pool: address %q: want host:port or a redis:// URL: %v", addr, err)
		}
		if err := checkPort(port); err != nil {
			return fmt.Errorf("pool: address %q: %v", addr, err)
		}
		c.addr = net.JoinHostPort(host, port)
		return nil
	}
	u, err := url.Parse(addr)
	if err != nil {
		return fmt.Errorf("pool: address %q: %v", redact(addr), err)
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		c.useTLS = true
	default:
		return fmt.Errorf("pool: address %q: scheme %q is not redis or rediss", redact(addr), u.Scheme)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return fmt.Errorf("pool: address %q: no host", redact(addr))
	}
	if port == "" {
		port = "6379"
	}
	if err := checkPort(port); err != nil {
		return fmt.Errorf("pool: address %q: %v", redact(addr), err)
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
			return fmt.Errorf("pool: address %q: database %q is not a non-negative integer", redact(addr), p)
		}
		c.db = db
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		var err error
		switch k {
		case "dial_timeout":
			c.dialTimeout, err = time.ParseDuration(v)
		case "read_timeout":
			c.readTimeout, err = time.ParseDuration(v)
		case "write_timeout":
			c.writeTimeout, err = time.ParseDuration(v)
		case "idle_timeout":
			c.idleTimeout, err = time.ParseDuration(v)
		case "max_idle":
			c.maxIdle, err = strconv.Atoi(v)
		case "max_active":
			c.maxActive, err = strconv.Atoi(v)
		case "db":
			c.db, err = strconv.Atoi(v)
		default:
			return fmt.Errorf("pool: address %q: unknown parameter %q", redact(addr), k)
		}
		if err != nil {
			return fmt.Errorf("pool: address %q: parameter %s=%q: %v", redact(addr), k, v, err)
		}
	}
	return nil
}

func checkPort(p string) error {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not in 1-65535", p)
	}
	return nil
}

// redact hides a password so that it never reaches an error message.
func redact(addr string) string {
	u, err := url.Parse(addr)
	if err != nil || u.User == nil {
		return addr
	}
	return u.Redacted()
}
