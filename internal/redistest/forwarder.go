package redistest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Forwarder is a TCP forwarder on loopback that can be pointed at another
// server, as a managed Redis endpoint moves to a promoted replica on
// failover: connections made after Repoint reach the new target, and those
// open at the time are closed, as the old primary's would be.
type Forwarder struct {
	l  net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex
	target string
	conns  map[net.Conn]struct{}
	closed bool
}

// NewForwarder starts a forwarder to target and registers its closing with
// tb.Cleanup. It fails tb if it cannot listen.
func NewForwarder(tb testing.TB, target string) *Forwarder {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: forwarder: %v", err)
	}
	f := &Forwarder{l: l, target: target, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	tb.Cleanup(f.Close)
	return f
}

// Addr returns the address clients connect to.
func (f *Forwarder) Addr() string { return f.l.Addr().String() }

// Repoint sends new connections to target and closes the open ones.
func (f *Forwarder) Repoint(target string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.target = target
	for c := range f.conns {
		c.Close()
	}
}

// Close stops the forwarder, closes its connections and waits for its
// goroutines.
func (f *Forwarder) Close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	f.l.Close()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *Forwarder) accept() {
	defer f.wg.Done()
	for {
		in, err := f.l.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		target := f.target
		f.mu.Unlock()
		out, err := net.Dial("tcp", target)
		if err != nil {
			in.Close()
			continue
		}
		if !f.track(in, out) {
			return
		}
		f.wg.Add(2)
		go f.pipe(in, out)
		go f.pipe(out, in)
	}
}

// track registers a pair of connections, or closes them if the forwarder
// was closed meanwhile.
func (f *Forwarder) track(a, b net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		a.Close()
		b.Close()
		return false
	}
	f.conns[a], f.conns[b] = struct{}{}, struct{}{}
	return true
}

// pipe copies from src to dst until either fails, then closes both.
func (f *Forwarder) pipe(dst, src net.Conn) {
	defer f.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	f.mu.Lock()
	delete(f.conns, dst)
	delete(f.conns, src)
	f.mu.Unlock()
}
