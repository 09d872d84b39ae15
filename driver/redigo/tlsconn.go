package redigo

import (
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// refusalWait bounds the read that looks for the server's alert after a
// failed write. The alert, when there is one, arrived before the reset that
// failed the write, so it is already waiting.
const refusalWait = 20 * time.Millisecond

// refusalConn is a TLS client connection that tells why the server refused
// it. In TLS 1.3 the client's handshake ends before the server has checked
// the client's certificate. A server that refuses it (an unknown CA, an
// expired certificate) sends an alert and closes, and the client's first
// write then often fails with "connection reset by peer", which hides the
// alert. On a write error before anything was read, refusalConn reads what
// the server sent and returns its alert instead, such as "remote error: tls:
// unknown certificate authority".
type refusalConn struct {
	*tls.Conn
	readAny atomic.Bool // the server sent data: it accepted the handshake
}

func (c *refusalConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.readAny.Store(true)
	}
	return n, err
}

func (c *refusalConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err == nil || c.readAny.Load() {
		return n, err
	}
	// The connection is broken either way; this read only learns why.
	if c.Conn.SetReadDeadline(time.Now().Add(refusalWait)) == nil {
		if _, rerr := c.Conn.Read(make([]byte, 1)); isRemoteAlert(rerr) {
			return n, rerr
		}
	}
	return n, err
}

// isRemoteAlert reports whether err is an alert the peer sent, which
// crypto/tls reports as a *net.OpError with Op "remote error".
func isRemoteAlert(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}
