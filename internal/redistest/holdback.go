package redistest

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// HoldBack is a TCP forwarder on loopback that can hold one request back on
// its way to the server, as a network delays a request past its client's
// timeout: the client gives up on it, and it still reaches the server
// later. Hold arms it with a byte string; the next chunk a client sends
// that contains it is kept, with everything sent after it on that
// connection, until Deliver writes it to the server. Every other connection
// passes at once.
//
// A chunk is what one read of the client's connection returns; a client
// that writes a request in one go, as redigo does, sends it in one chunk
// on loopback. A request that was not held shows as Held staying open.
type HoldBack struct {
	l  net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex
	target string
	conns  map[net.Conn]struct{}
	closed bool
	match  []byte    // armed: hold the next chunk that contains it
	held   *heldConn // the connection held back, once one is
	caught chan struct{}
}

// heldConn is the connection a HoldBack holds back: what its client sent,
// and the server's side, kept open for Deliver.
type heldConn struct {
	server  net.Conn
	data    []byte
	replied chan struct{} // closed once the server sent anything after Deliver
	once    sync.Once
	sent    bool // Deliver wrote data; under HoldBack.mu
}

// NewHoldBack starts a forwarder to target and registers its closing with
// tb.Cleanup. It fails tb if it cannot listen.
func NewHoldBack(tb testing.TB, target string) *HoldBack {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: hold-back forwarder: %v", err)
	}
	h := &HoldBack{l: l, target: target, conns: map[net.Conn]struct{}{}, caught: make(chan struct{})}
	h.wg.Add(1)
	go h.accept()
	tb.Cleanup(h.Close)
	return h
}

// Addr returns the address clients connect to.
func (h *HoldBack) Addr() string { return h.l.Addr().String() }

// Hold arms the forwarder: the next chunk any client sends that contains
// match is held back, with the rest of its connection. It may be armed
// once.
func (h *HoldBack) Hold(match []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.match = bytes.Clone(match)
}

// Held is closed once a request is held back.
func (h *HoldBack) Held() <-chan struct{} { return h.caught }

// Deliver writes what was held back to the server and waits, up to limit,
// until the server has answered it: then the server has run it. The client
// that sent it has long given up and does not see the answer.
func (h *HoldBack) Deliver(limit time.Duration) error {
	h.mu.Lock()
	hc := h.held
	if hc == nil {
		h.mu.Unlock()
		return errors.New("redistest: nothing was held back")
	}
	hc.sent = true
	data := hc.data
	hc.data = nil
	h.mu.Unlock()
	hc.server.SetWriteDeadline(time.Now().Add(limit))
	if _, err := hc.server.Write(data); err != nil {
		return err
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-hc.replied:
		return nil
	case <-t.C:
		return errors.New("redistest: the server did not answer what was held back")
	}
}

// Close stops the forwarder, closes its connections and waits for its
// goroutines.
func (h *HoldBack) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.l.Close()
	for c := range h.conns {
		c.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

func (h *HoldBack) accept() {
	defer h.wg.Done()
	for {
		in, err := h.l.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", h.target)
		if err != nil {
			in.Close()
			continue
		}
		if !h.track(in, out) {
			return
		}
		h.wg.Add(2)
		go h.up(in, out)
		go h.down(out, in)
	}
}

// track registers a pair of connections, or closes them if the forwarder
// was closed meanwhile.
func (h *HoldBack) track(a, b net.Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		a.Close()
		b.Close()
		return false
	}
	h.conns[a], h.conns[b] = struct{}{}, struct{}{}
	return true
}

// up copies what the client sends to the server, unless the connection is
// held back: then it keeps it, and keeps the server's side open when the
// client goes away.
func (h *HoldBack) up(client, server net.Conn) {
	defer h.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			h.mu.Lock()
			hc := h.held
			switch {
			case hc != nil && hc.server == server && !hc.sent:
				hc.data = append(hc.data, buf[:n]...)
				h.mu.Unlock()
				continue
			case hc == nil && h.match != nil && bytes.Contains(buf[:n], h.match):
				h.held = &heldConn{server: server, data: bytes.Clone(buf[:n]), replied: make(chan struct{})}
				h.match = nil
				close(h.caught)
				h.mu.Unlock()
				continue
			}
			h.mu.Unlock()
			if _, werr := server.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	client.Close()
	h.mu.Lock()
	keep := h.held != nil && h.held.server == server && !h.closed
	h.mu.Unlock()
	if !keep {
		server.Close()
	}
	h.forget(client)
}

// down copies what the server sends to the client. On the connection held
// back it notes the first answer after Deliver, whether or not the client
// is still there to read it.
func (h *HoldBack) down(server, client net.Conn) {
	defer h.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			h.mu.Lock()
			hc := h.held
			sent := hc != nil && hc.sent
			h.mu.Unlock()
			if hc != nil && hc.server == server {
				if sent {
					hc.once.Do(func() { close(hc.replied) })
				}
				client.Write(buf[:n]) // the client may have gone: the answer is for nobody
				continue
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	server.Close()
	client.Close()
	h.forget(server)
}

func (h *HoldBack) forget(c net.Conn) {
	h.mu.Lock()
	delete(h.conns, c)
	h.mu.Unlock()
}
