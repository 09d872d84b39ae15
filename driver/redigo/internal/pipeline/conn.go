package pipeline

import (
	"bufio"
	"net"
	"sync"
	"time"
)

// Conn is a connection that is not shared: for the handshake of a new
// connection (AUTH, SELECT), and for pub/sub, where one goroutine reads
// while others write. Its writes are serialised; its reads are the one
// reader's.
type Conn struct {
	nc    net.Conn
	br    *bufio.Reader
	write time.Duration

	mu  sync.Mutex
	buf []byte
}

// NewConn wraps nc. writeTimeout bounds each Send; 0 leaves nc's write
// deadline as it is.
func NewConn(nc net.Conn, writeTimeout time.Duration) *Conn {
	return &Conn{nc: nc, br: bufio.NewReader(nc), write: writeTimeout}
}

// Send writes the commands, each given as words, in one write.
func (c *Conn) Send(commands ...[]string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = c.buf[:0]
	for _, w := range commands {
		c.buf = appendCommand(c.buf, w)
	}
	if c.write > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(c.write))
	}
	_, err := c.nc.Write(c.buf)
	return err
}

// Receive reads one reply in the driver's neutral form, an error reply as
// a driver.Error value, waiting until deadline (the zero time: without
// bound).
func (c *Conn) Receive(deadline time.Time) (any, error) {
	c.nc.SetReadDeadline(deadline)
	return readReply(c.br)
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }
