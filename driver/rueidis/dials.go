package rueidisdriver

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// Dials counts the connections a rueidis client opens, per server address.
// CountDials makes one; WithDials hands it to New. Its methods are safe for
// concurrent use.
type Dials struct {
	total    atomic.Uint64
	mu       sync.Mutex
	byServer map[string]*atomic.Uint64
}

// CountDials installs in opt a dial function that counts every connection
// opened with it, and returns the counts. It wraps what opt dials with:
// its DialCtxFn, else its DialFn, else rueidis' own dialing (TLS included
// when opt.TLSConfig is set), so the connections are the same as before.
// Call it before rueidis.NewClient(*opt), and give the counts to New with
// WithDials. A nil opt gives nil, which WithDials refuses.
func CountDials(opt *rueidis.ClientOption) *Dials {
	if opt == nil {
		return nil
	}
	d := &Dials{byServer: map[string]*atomic.Uint64{}}
	next := opt.DialCtxFn
	if next == nil && opt.DialFn != nil {
		legacy := opt.DialFn
		next = func(_ context.Context, dst string, nd *net.Dialer, cfg *tls.Config) (net.Conn, error) {
			return legacy(dst, nd, cfg)
		}
	}
	if next == nil {
		next = func(ctx context.Context, dst string, nd *net.Dialer, cfg *tls.Config) (net.Conn, error) {
			if cfg != nil {
				return (&tls.Dialer{NetDialer: nd, Config: cfg}).DialContext(ctx, "tcp", dst)
			}
			return nd.DialContext(ctx, "tcp", dst)
		}
	}
	opt.DialCtxFn = func(ctx context.Context, dst string, nd *net.Dialer, cfg *tls.Config) (net.Conn, error) {
		conn, err := next(ctx, dst, nd, cfg)
		if err == nil {
			d.server(dst).Add(1)
			d.total.Add(1)
		}
		return conn, err
	}
	opt.DialFn = nil
	return d
}

func (d *Dials) server(addr string) *atomic.Uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, ok := d.byServer[addr]
	if !ok {
		n = new(atomic.Uint64)
		d.byServer[addr] = n
	}
	return n
}

// Total returns how many connections the client has opened.
func (d *Dials) Total() uint64 { return d.total.Load() }

// To returns how many connections the client has opened to the server at
// addr, as rueidis names it ("host:port").
func (d *Dials) To(addr string) uint64 { return d.server(addr).Load() }
