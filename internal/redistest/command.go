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

// DoAs is Do on a connection that first authenticates with password, as
// the default user: for a server whose requirepass a test has set.
func (s *Server) DoAs(password string, args ...string) (string, error) {
	return doSeq(s.Addr(), []string{"AUTH", password}, args)
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

// ListAt runs one command that replies with a flat array, such as KEYS or
// CONFIG GET, on a new connection to the server at addr, as the default
// user, and returns the elements as text. A nil element is "".
func ListAt(addr string, args ...string) ([]string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := send(c, args); err != nil {
		return nil, err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if !strings.HasPrefix(line, "*") {
		_, err := reply(r, addr, args, line)
		if err == nil {
			err = fmt.Errorf("redistest: %s %s: reply %q is no array", addr, args[0], line)
		}
		return nil, err
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil {
		return nil, fmt.Errorf("redistest: bad reply %q", line)
	}
	out := make([]string, 0, max(n, 0))
	for range n {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		v, err := reply(r, addr, args, strings.TrimSuffix(line, "\r\n"))
		if err != nil && !errors.Is(err, ErrNil) {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// send writes one command to w.
func send(w io.Writer, args []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// roundTrip writes one command to w and reads its reply from r.
func roundTrip(w io.Writer, r *bufio.Reader, addr string, args []string) (string, error) {
	if err := send(w, args); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return reply(r, addr, args, strings.TrimSuffix(line, "\r\n"))
}

// reply reads the rest of the reply whose first line, without its CRLF, is
// line: a simple string, an integer, an error or a bulk string.
func reply(r *bufio.Reader, addr string, args []string, line string) (string, error) {
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

// ConnectionsReceived returns how many connections the server has
// accepted since it started, the one asking included; password, when not
// "", is the one the server asks for (see DoAs).
func (s *Server) ConnectionsReceived(password string) (int, error) {
	stats, err := s.InfoAs(password, "stats")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(stats["total_connections_received"])
}

// Info returns the fields of one INFO section, such as "replication".
func (s *Server) Info(section string) (map[string]string, error) {
	return s.InfoAs("", section)
}

// InfoAs is Info on a connection that first authenticates with password,
// when it is not "" (see DoAs).
func (s *Server) InfoAs(password, section string) (map[string]string, error) {
	cmds := [][]string{{"INFO", section}}
	if password != "" {
		cmds = [][]string{{"AUTH", password}, cmds[0]}
	}
	body, err := doSeq(s.Addr(), cmds...)
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
