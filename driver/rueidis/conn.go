package rueidisdriver

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
)

// The lock's connection to each server. The driver holds one dedicated
// connection of the client's per server (Client.Dedicate) for as long as it
// lives, and sends every call to that server on it, from any number of
// goroutines at once, pipelined: see batcher.
//
// Holding the connection is what lets the driver know when the guard must
// ask: rueidis never redials a connection it has handed out, so every
// reply on it comes from the one server process it was opened to. A new
// connection is the only way to reach another process, and each one the
// driver takes is fresh (see driver.Check.Due) until a call that carried
// the guard's questions on it has handed their answers to its Done, and
// that Done has returned. The client's shared connections, which rueidis
// replaces by itself, offer no such sign.

// line is the driver's connection to one server.
type line struct {
	mu     sync.Mutex
	cur    *held // nil until taken, and after it failed
	closed bool  // the master is closed: no more connections
	// refusals: the connections in a row dropped before they served a
	// call, which space the next (see drop).
	refusals driver.Refusals
	dialing  sync.WaitGroup
	senders  sync.WaitGroup // the senders of the connections taken (see batcher)
}

// held is one dedicated connection, ready once dc and b are set. rueidis
// hands one out even when it cannot dial, and its calls then fail with why.
type held struct {
	ready   chan struct{}
	dc      rueidis.DedicatedClient
	b       *batcher // sends the calls on dc
	release func()
	// answered: a call that carried the guard's questions on the connection
	// has handed their answers over, and the Done that took them has
	// returned. Until then the connection is fresh, and every call on it
	// asks.
	answered atomic.Bool
	// served: a call on it had a reply that is not an error (see
	// line.drop).
	served atomic.Bool
}

// fresh reports whether the guard's questions are due on h (see
// driver.Check.Due): no call on it has yet returned their answers.
func (h *held) fresh() bool { return !h.answered.Load() }

// answer marks h as answered, when h is not nil. The caller has handed a
// reply with the answers of h's server to the call's Done, and that Done
// has returned: the lock has taken them before any call on h goes without
// questions.
func (h *held) answer() {
	if h != nil {
		h.answered.Store(true)
	}
}

// serve marks h as having served a call; it reads first, as every call
// that succeeds marks it.
func (h *held) serve() {
	if !h.served.Load() {
		h.served.Store(true)
	}
}

// errMasterClosed is a call's error after Close.
var errMasterClosed = errors.New("rueidisdriver: master closed")

// conn returns the line's connection, taking one through the client node
// returns when it has none, within ctx. rueidis dials a connection without
// a ctx, bounded by the client's dial timeout; a call whose ctx ends first
// returns, and the connection serves the next one. While the server is
// refusing connections (see drop) it takes none, and fails at once.
func (l *line) conn(ctx context.Context, node func() (rueidis.Client, error)) (*held, error) {
	l.mu.Lock()
	h := l.cur
	if h == nil {
		var client rueidis.Client
		err := l.refusals.Held(time.Now())
		if err == nil {
			client, err = node()
		}
		if err == nil && l.closed {
			err = errMasterClosed
		}
		if err != nil {
			l.mu.Unlock()
			return nil, err
		}
		h = l.take(client)
	}
	l.mu.Unlock()
	select {
	case <-h.ready:
		return h, nil
	default:
	}
	select {
	case <-h.ready:
		return h, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ready returns the line's connection when it has one ready, or nil.
func (l *line) ready() *held {
	l.mu.Lock()
	h := l.cur
	l.mu.Unlock()
	if h == nil {
		return nil
	}
	select {
	case <-h.ready:
		return h
	default:
		return nil
	}
}

// open takes the line's first connection in the background.
func (l *line) open(client rueidis.Client) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil && !l.closed {
		l.take(client)
	}
}

// take starts taking a connection through client, as the line's current
// one. l.mu is held.
func (l *line) take(client rueidis.Client) *held {
	h := &held{ready: make(chan struct{})}
	l.cur = h
	l.dialing.Add(1)
	go func() {
		defer l.dialing.Done()
		h.dc, h.release = client.Dedicate()
		h.b = newBatcher(h.dc, &l.senders)
		close(h.ready)
	}()
	return h
}

// drop closes h, which failed with err, unless the line has moved on
// already: the next call takes a new connection, and the guard asks on it.
// A connection dropped before it served a call, as driver.Refused judges
// its error, was refused: the next is taken only as driver.Refusals
// spaces them, so that a server that refuses every connection (a password
// missing or wrong, maxclients reached) is not dialled at every call;
// rueidis hands out a connection whose setup failed, its calls failing
// with why.
// It does not wait for h's sender, which may call it.
func (l *line) drop(h *held, err error) {
	l.mu.Lock()
	if l.cur != h {
		l.mu.Unlock()
		return
	}
	l.cur = nil
	switch {
	case h.served.Load():
		l.refusals.Served()
	case driver.Refused(err):
		l.refusals.Add(refusal(err), time.Now())
	}
	l.mu.Unlock()
	h.dc.Close() // closes the connection, and gives it back to the client's pool, which discards it
	h.b.close()
}

// close gives the line's connection back to the client, once any dial in
// flight has ended and every sender has, and takes no more.
func (l *line) close() {
	l.mu.Lock()
	l.closed = true
	h := l.cur
	l.cur = nil
	l.mu.Unlock()
	l.dialing.Wait()
	if h != nil {
		h.b.close()
	}
	l.senders.Wait()
	if h != nil {
		h.release()
	}
}

// lines holds the lines of a cluster client, one per shard master.
type lines struct {
	mu     sync.Mutex
	by     map[string]*line
	closed bool
}

// of returns server's line, made on first use; after close, a closed one.
func (ls *lines) of(server string) *line {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return &line{closed: true}
	}
	if ls.by == nil {
		ls.by = map[string]*line{}
	}
	l, ok := ls.by[server]
	if !ok {
		l = new(line)
		ls.by[server] = l
	}
	return l
}

func (ls *lines) close() {
	ls.mu.Lock()
	all := ls.by
	ls.by, ls.closed = nil, true
	ls.mu.Unlock()
	for _, l := range all {
		l.close()
	}
}
