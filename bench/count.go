package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
)

// Counting the commands a client sends, on the client's side: the masters'
// own count (INFO stats) also counts what the scripts call inside, which
// would make a script of ten calls look like ten commands.

// countedMaster is a quorumlock driver that counts its commands: each
// script, and the restart guard's questions when they went with it (a
// NOSCRIPT fallback or a retry on a new connection is not seen), once the
// call has returned.
type countedMaster struct {
	driver.Master
	n     *atomic.Int64
	dones *sync.Pool // *countedDone not in use
}

// counted wraps m in a countedMaster.
func counted(m driver.Master, n *atomic.Int64) driver.Master {
	return countedMaster{m, n, &sync.Pool{New: func() any { return new(countedDone) }}}
}

// Start starts call on the wrapped driver and counts its commands once
// it has returned.
func (m countedMaster) Start(ctx context.Context, call driver.Call, done driver.Done) {
	c := m.dones.Get().(*countedDone)
	c.n, c.done, c.pool = m.n, done, m.dones
	m.Master.Start(ctx, call, c)
}

// countedDone counts a started call's commands once it has returned. It is
// reused, so that counting adds no allocation per call to the library's
// own.
type countedDone struct {
	n    *atomic.Int64
	done driver.Done
	pool *sync.Pool // where it goes back once used
}

func (c *countedDone) Returned(rep driver.Reply, err error) {
	n, done, pool := c.n, c.done, c.pool
	*c = countedDone{}
	pool.Put(c)
	n.Add(int64(1 + len(rep.Answers)))
	done.Returned(rep, err)
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

// goRedisCounter is a go-redis hook that counts the commands its client
// sends: each command, and each command of a pipeline.
type goRedisCounter struct{ n *atomic.Int64 }

var _ goredis.Hook = goRedisCounter{}

func (h goRedisCounter) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h goRedisCounter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h goRedisCounter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// countGoRedis has a go-redis client count the commands it sends in n,
// with a hook on the client that sends them: on a *goredis.Client itself
// (its Conns inherit it), and on each node client of a
// *goredis.ClusterClient, where every command goes out, whether through
// the cluster client (redsync) or through a node's own client (the
// quorumlock adapter). Call it before the client's first command: a
// cluster client's nodes met before are not counted.
func countGoRedis(c goredis.UniversalClient, n *atomic.Int64) {
	h := goRedisCounter{n}
	switch cl := c.(type) {
	case *goredis.ClusterClient:
		cl.OnNewNode(func(node *goredis.Client) { node.AddHook(h) })
	case *goredis.Client:
		cl.AddHook(h)
	}
}

// countedRueidis is a rueidis client that counts the commands sent through
// it, and through the node clients (Nodes) and dedicated connections
// (Dedicated, Dedicate) it hands out: each command of Do, DoMulti and
// Receive. What rueidis sends by itself (HELLO on a new connection, its own
// CLUSTER SLOTS) is not seen.
type countedRueidis struct {
	rueidis.Client
	n *atomic.Int64
}

func (c countedRueidis) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c countedRueidis) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(int64(len(multi)))
	return c.Client.DoMulti(ctx, multi...)
}

func (c countedRueidis) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	c.n.Add(1)
	return c.Client.Receive(ctx, subscribe, fn)
}

// Nodes returns the client's node clients, each counted. rueidis makes a
// new map and, for a cluster, new node clients on every call; the wrappers
// add one small allocation per node.
func (c countedRueidis) Nodes() map[string]rueidis.Client {
	nodes := c.Client.Nodes()
	for addr, node := range nodes {
		nodes[addr] = countedRueidis{node, c.n}
	}
	return nodes
}

func (c countedRueidis) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.Client.Dedicated(func(dc rueidis.DedicatedClient) error {
		return fn(countedDedicated{dc, c.n})
	})
}

func (c countedRueidis) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := c.Client.Dedicate()
	return countedDedicated{dc, c.n}, release
}

// countedDedicated is a dedicated rueidis connection that counts its
// commands.
type countedDedicated struct {
	rueidis.DedicatedClient
	n *atomic.Int64
}

func (c countedDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.DedicatedClient.Do(ctx, cmd)
}

func (c countedDedicated) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(int64(len(multi)))
	return c.DedicatedClient.DoMulti(ctx, multi...)
}

func (c countedDedicated) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	c.n.Add(1)
	return c.DedicatedClient.Receive(ctx, subscribe, fn)
}
