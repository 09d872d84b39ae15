package bench

import (
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"time"
)

// DelayProxy forwards TCP connections to one upstream address and holds
// every byte coming back for a fixed delay: a master that answers late, or
// one a network away. Requests pass at once; replies keep their order and
// their throughput: each chunk is stamped when it arrives and written out
// when its delay has passed, so pipelined replies are not delayed one after
// another.
//
// One goroutine, on a thread of its own, writes the replies of every
// connection in the order they arrived (with a constant delay that is the
// order they fall due), waiting on a kernel timer (see preciseTimer) so that
// sub-millisecond delays are kept to the microsecond.
type DelayProxy struct {
	upstream string
	delay    time.Duration
	ln       net.Listener
	timer    *preciseTimer
	replies  chan chunk // every connection's replies, in arrival order
	done     chan struct{}

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// chunk is bytes a master sent, due to be passed on to its client.
type chunk struct {
	to  net.Conn
	b   []byte
	due time.Time
}

// replyQueue bounds the replies in flight through one proxy; a full queue
// stops reading from the masters, as a slow network would.
const replyQueue = 1 << 14

// earlyBy is how much sooner than its due time a reply may be passed on.
const earlyBy = 10 * time.Microsecond

// NewDelayProxy listens on a free loopback port and forwards to upstream.
func NewDelayProxy(upstream string, delay time.Duration) (*DelayProxy, error) {
	if delay < 0 {
		return nil, errors.New("proxy: negative delay")
	}
	timer, err := newPreciseTimer()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		timer.Close()
		return nil, err
	}
	p := &DelayProxy{
		upstream: upstream, delay: delay, ln: ln, timer: timer,
		replies: make(chan chunk, replyQueue), done: make(chan struct{}),
		conns: map[net.Conn]struct{}{},
	}
	p.wg.Add(2)
	go p.accept()
	go p.deliver()
	return p, nil
}

// Addr returns the proxy's "host:port".
func (p *DelayProxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for its
// goroutines.
func (p *DelayProxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return errors.Join(err, p.timer.Close())
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
	if !p.track(client) {
		client.Close()
		return
	}
	defer p.untrack(client) // closed by deliver, after its last reply
	server, err := net.DialTimeout("tcp", p.upstream, time.Second)
	if err != nil || !p.track(server) {
		if server != nil {
			server.Close()
		}
		client.Close()
		return
	}
	defer p.untrack(server)
	defer server.Close()

	p.wg.Add(1)
	go func() { // requests: at once
		defer p.wg.Done()
		io.Copy(server, client)
		server.Close()
	}()
	buf := make([]byte, 32<<10)
	for { // replies: stamped on arrival
		n, err := server.Read(buf)
		c := chunk{to: client, due: time.Now().Add(p.delay)}
		if n > 0 {
			c.b = append([]byte(nil), buf[:n]...)
		} else if err == nil {
			continue
		}
		// A chunk without bytes closes the client once the replies before it are out.
		select {
		case p.replies <- c:
		case <-p.done:
			client.Close()
			return
		}
		if err != nil {
			if n > 0 {
				select {
				case p.replies <- chunk{to: client, due: c.due}:
				case <-p.done:
					client.Close()
				}
			}
			return
		}
	}
}

// deliver writes each reply when it is due, in arrival order.
func (p *DelayProxy) deliver() {
	defer p.wg.Done()
	runtime.LockOSThread() // the timer's blocking reads keep to this thread
	defer runtime.UnlockOSThread()
	for {
		select {
		case c := <-p.replies:
			// A chunk due within earlyBy goes now: replies that come in a
			// burst go out in one wake-up, not one each.
			if d := time.Until(c.due); d > earlyBy {
				if err := p.timer.sleep(d); err != nil {
					time.Sleep(d)
				}
			}
			if c.b == nil {
				c.to.Close()
				continue
			}
			c.to.SetWriteDeadline(time.Now().Add(time.Second)) // a client that stops reading holds up no other
			if _, err := c.to.Write(c.b); err != nil {
				c.to.Close()
			}
		case <-p.done:
			for { // the clients whose closing chunk is still queued
				select {
				case c := <-p.replies:
					c.to.Close()
				default:
					return
				}
			}
		}
	}
}
