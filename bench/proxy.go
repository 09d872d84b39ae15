package bench

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// DelayProxy forwards TCP connections to one upstream address and holds
// every byte coming back for a fixed delay: a master that answers late.
// Requests pass at once, and replies keep their order and their throughput:
// each chunk is stamped when it arrives and written out when its delay has
// passed, so pipelined replies are not delayed one after another.
type DelayProxy struct {
	upstream string
	delay    time.Duration
	ln       net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// chunkQueue bounds the replies in flight per connection; a full queue
// stops reading from the master, as a slow network would.
const chunkQueue = 1024

// NewDelayProxy listens on a free loopback port and forwards to upstream.
func NewDelayProxy(upstream string, delay time.Duration) (*DelayProxy, error) {
	if delay < 0 {
		return nil, errors.New("proxy: negative delay")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &DelayProxy{upstream: upstream, delay: delay, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the proxy's "host:port".
func (p *DelayProxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for its
// goroutines.
func (p *DelayProxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// track registers c so that Close can close it; false once closed.
func (p *DelayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *DelayProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *DelayProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

func (p *DelayProxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer client.Close()
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.upstream, time.Second)
	if err != nil {
		return
	}
	defer server.Close()
	if !p.track(server) {
		return
	}
	defer p.untrack(server)

	type chunk struct {
		b   []byte
		due time.Time
	}
	chunks := make(chan chunk, chunkQueue)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // requests: at once
		defer wg.Done()
		io.Copy(server, client)
		server.Close()
		client.Close()
	}()
	go func() { // replies: stamped on arrival
		defer wg.Done()
		defer close(chunks)
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				chunks <- chunk{b: append([]byte(nil), buf[:n]...), due: time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { // replies: written out when due
		defer wg.Done()
		for c := range chunks {
			if d := time.Until(c.due); d > 0 {
				time.Sleep(d)
			}
			if _, err := client.Write(c.b); err != nil {
				server.Close()
				client.Close()
				for range chunks { // drain so the reader can finish
				}
				return
			}
		}
		client.Close()
	}()
	wg.Wait()
}
