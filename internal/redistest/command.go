package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// ErrNil is Do's error for a nil reply.
var ErrNil = errors.New("redistest: nil reply")

// Do runs one command on a new connection to the server, as the default
// user, and returns the reply: simple and bulk strings and integers as text.
// An error reply is returned as an error; so are array replies, which it does
// not read.
func (s *Server) Do(args ...string) (string, error) {
	return DoAt(s.Addr(), args...)
}

// DoAt is Do on the server at addr, which may be behind a Forwarder.
func DoAt(addr string, args ...string) (string, error) {
	return doSeq(addr, args)
}

// doSeq runs commands one after another on one new connection to addr, as
// a cluster replica needs READONLY before it serves a read, and returns the
// last reply. It stops at the first error.
func doSeq(addr string, cmds ...[]string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	var reply string
	for _, args := range cmds {
		if reply, err = roundTrip(c, r, addr, args); err != nil {
			return "", err
		}
	}
	return reply, nil
}

// roundTrip writes one command to w and reads its reply from r.
func roundTrip(w io.Writer, r *bufio.Reader, addr string, args []string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("redistest: empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redistest: %s %s: %s", addr, args[0], line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("redistest: bad reply %q", line)
		}
		if n < 0 {
			return "", ErrNil
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return "", err
		}
		return string(body[:n]), nil
	}
	return "", fmt.Errorf("redistest: %s: reply %q not read", args[0], line)
}

// Info returns the fields of one INFO section, such as "replication".
func (s *Server) Info(section string) (map[string]string, error) {
	body, err := s.Do("INFO", section)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(body, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out, nil
}
