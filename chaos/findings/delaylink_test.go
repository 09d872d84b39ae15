package findings

import (
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// delayLink is a TCP relay to one master that can hold back the next
// segment a client sends, as a network does when that segment is lost and
// retransmitted, while later connections pass at once.
type delayLink struct {
	ln       net.Listener
	upstream string
	delay    atomic.Int64 // the next client segment waits this long; 0 = none
	refuse   atomic.Int64 // new connections are reset until this UnixNano
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func newDelayLink(t *testing.T, upstream string) *delayLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &delayLink{ln: ln, upstream: upstream}
	d.wg.Add(1)
	go d.accept()
	t.Cleanup(d.close)
	return d
}

func (d *delayLink) Addr() string { return d.ln.Addr().String() }

// DelayNext holds back the next segment any client sends by dt.
func (d *delayLink) DelayNext(dt time.Duration) { d.delay.Store(int64(dt)) }

// RefuseFor resets, for the next dt, every connection opened and every
// other connection a client sends on, as a master that is starting and not
// yet listening does. A segment held back by DelayNext still goes through.
func (d *delayLink) RefuseFor(dt time.Duration) { d.refuse.Store(time.Now().Add(dt).UnixNano()) }

func (d *delayLink) accept() {
	defer d.wg.Done()
	for {
		c, err := d.ln.Accept()
		if err != nil {
			return
		}
		if time.Now().UnixNano() < d.refuse.Load() {
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			continue
		}
		u, err := net.DialTimeout("tcp", d.upstream, time.Second)
		if err != nil {
			c.Close()
			continue
		}
		d.mu.Lock()
		d.conns = append(d.conns, c, u)
		d.mu.Unlock()
		d.wg.Add(2)
		go func() { // client to master, maybe held back
			defer d.wg.Done()
			defer u.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if dt := time.Duration(d.delay.Swap(0)); dt > 0 {
						time.Sleep(dt)
					} else if time.Now().UnixNano() < d.refuse.Load() {
						c.(*net.TCPConn).SetLinger(0) // a reset, not a clean close
						c.Close()
						return
					}
					if _, werr := u.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { // master to client
			defer d.wg.Done()
			defer c.Close()
			io.Copy(c, u)
		}()
	}
}

func (d *delayLink) close() {
	d.ln.Close()
	d.mu.Lock()
	for _, c := range d.conns {
		c.Close()
	}
	d.mu.Unlock()
	d.wg.Wait()
}

// closedAddrs returns n distinct loopback addresses nothing listens on:
// masters that refuse this client, as behind a partition that rejects
// (ports that were free a moment ago, see redistest.FreePorts).
func closedAddrs(t *testing.T, n int) []string {
	t.Helper()
	ports, err := redistest.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, n)
	for i, p := range ports {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return addrs
}
