package bench

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/driver"
)

// Counting the commands a client sends, on the client's side: the masters'
// own count (INFO stats) also counts what the scripts call inside, which
// would make a script of ten calls look like ten commands.

// countedMaster is a quorumlock driver that counts its commands: each
// script, and the restart guard's questions when they went with it (a
// NOSCRIPT fallback or a retry on a new connection is not seen).
type countedMaster struct {
	driver.Master
	n *atomic.Int64
}

func (m countedMaster) Eval(ctx context.Context, call driver.Call) (driver.Reply, error) {
	rep, err := m.Master.Eval(ctx, call)
	m.n.Add(int64(1 + len(rep.Answers)))
	return rep, err
}

// countedRedigoPool is a redigo pool, as redsync's adapter takes it, whose
// connections count the commands sent on them.
type countedRedigoPool struct {
	p RedigoPool
	n *atomic.Int64
}

var _ RedigoPool = countedRedigoPool{}

func (p countedRedigoPool) Get() redis.Conn { return countedConn{p.p.Get(), p.n} }

func (p countedRedigoPool) GetContext(ctx context.Context) (redis.Conn, error) {
	c, err := p.p.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	return countedConn{c, p.n}, nil
}

type countedConn struct {
	redis.Conn
	n *atomic.Int64
}

var _ redis.ConnWithTimeout = countedConn{}

func (c countedConn) Send(cmd string, args ...any) error {
	c.n.Add(1)
	return c.Conn.Send(cmd, args...)
}

func (c countedConn) Do(cmd string, args ...any) (any, error) {
	if cmd != "" {
		c.n.Add(1)
	}
	return c.Conn.Do(cmd, args...)
}

func (c countedConn) DoWithTimeout(d time.Duration, cmd string, args ...any) (any, error) {
	if cmd != "" {
		c.n.Add(1)
	}
	return redis.DoWithTimeout(c.Conn, d, cmd, args...)
}

func (c countedConn) ReceiveWithTimeout(d time.Duration) (any, error) {
	return redis.ReceiveWithTimeout(c.Conn, d)
}

// countedFloorMaster is a floor's master that counts its commands.
type countedFloorMaster struct {
	floorMaster
	n *atomic.Int64
}

func (m countedFloorMaster) do(ctx context.Context, cmd string, args ...string) (any, error) {
	m.n.Add(1)
	return m.floorMaster.do(ctx, cmd, args...)
}

// countCommands has the floor count every command it sends in n.
func (f *Floor) countCommands(n *atomic.Int64) {
	for i, m := range f.masters {
		f.masters[i] = countedFloorMaster{m, n}
	}
}
