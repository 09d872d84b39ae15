package workload

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// ErrKilled is the error of a Lock call whose process was killed while it
// waited (history.Attempt.Killed).
var ErrKilled = errors.New("workload: the client's process was killed while it waited")

// ProcsConfig says what the waiter processes do.
type ProcsConfig struct {
	// Exe is the binary each waiter runs: a test binary whose TestMain
	// returns ChildMain's code when IsChild.
	Exe string
	// Clients is how many waiter processes run at once, one per client.
	Clients int
	// Addrs returns a client's links to the masters, in node order.
	Addrs func(client int) []string
	// Masters are the masters' own addresses, past the links, to read what
	// a killed client left behind.
	Masters []string
	Key     string
	TTL     time.Duration
	// NodeTimeout is the clients' per-master timeout.
	NodeTimeout time.Duration
	// Guard leaves the restart guard on.
	Guard bool
	// QueueLease is the lease of a waiter's place in line
	// (redlock.WithQueueLease); 0 leaves the library's default.
	QueueLease time.Duration
	// Wait bounds each Lock call.
	Wait time.Duration
	// Pause is the longest pause between the read and the write of the
	// shared set.
	Pause time.Duration
	// Backoff is the longest wait after a failed Lock call.
	Backoff time.Duration
	Seed    uint64
	History *history.History
	Set     *Set
	Store   *Fenced
}

func (c ProcsConfig) validate() error {
	switch {
	case c.Exe == "" || c.Clients <= 0 || c.Addrs == nil || c.Key == "":
		return errors.New("workload: waiter processes need a binary, clients, their links and a key")
	case c.TTL <= 0 || c.NodeTimeout <= 0 || c.Wait <= 0 || c.Backoff <= 0 || c.Pause < 0 || c.QueueLease < 0:
		return errors.New("workload: waiter processes need a positive TTL, NodeTimeout, Wait and Backoff, and a Pause and QueueLease >= 0")
	case c.History == nil || c.Set == nil || c.Store == nil:
		return errors.New("workload: waiter processes need a history, a set and a fenced store")
	}
	return nil
}

// Procs runs the clients as separate processes, one waiter each (see
// ChildMain), and records what they do in the history, as Workload does
// for clients inside the test process: Lock calls as attempts, holds,
// tokens, and the critical section's writes to the shared set and the
// fenced store, which the parent makes when a waiter asks. A process can
// be killed with SIGKILL and started again, as a crashed pod is.
type Procs struct {
	cfg   ProcsConfig
	off   int64 // CLOCK_MONOTONIC minus the run's clock, in ns
	elems atomic.Int64

	mu        sync.Mutex
	cur       []*proc // each client's latest process
	starts    []int   // how many processes each client has had
	killFault map[int]int
	stopping  bool
	problems  []string
	wg        sync.WaitGroup
}

// proc is one process of one client.
type proc struct {
	p           *Procs
	client, inc int
	cmd         *exec.Cmd
	done        chan struct{} // closed once its output is read and it has exited

	wmu   sync.Mutex // one write to stdin at a time
	stdin io.WriteCloser

	// Guarded by Procs.mu.
	killed  bool
	killAt  time.Duration
	waiting bool
	since   time.Duration // the start of the Lock call under way
	hold    int           // the hold under way, or -1
	fence   int64
	before  []int64 // the shared set as the holder read it
	tokens  map[string]bool
}

// NewProcs returns the waiter processes of cfg, none started yet.
func NewProcs(cfg ProcsConfig) (*Procs, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Procs{cfg: cfg, cur: make([]*proc, cfg.Clients), starts: make([]int, cfg.Clients), killFault: map[int]int{}}
	m := monoNow()
	p.off = m - int64(cfg.History.Now())
	return p, nil
}

// at converts a waiter's CLOCK_MONOTONIC reading to the run's clock.
func (p *Procs) at(ns int64) time.Duration { return time.Duration(ns - p.off) }

// Run starts every client's process, waits until ctx is done, then tells
// every process to stop (a Lock call under way ends with ctx's error, a
// critical section under way finishes) and waits until they have exited.
func (p *Procs) Run(ctx context.Context) {
	for i := range p.cfg.Clients {
		if err := p.Start(i); err != nil {
			p.problemf("starting client %d: %v", i, err)
		}
	}
	<-ctx.Done()
	p.mu.Lock()
	p.stopping = true
	live := slices.Clone(p.cur)
	p.mu.Unlock()
	for _, pr := range live {
		if pr != nil {
			pr.send(stopMsg)
		}
	}
	for _, pr := range live {
		if pr == nil {
			continue
		}
		select {
		case <-pr.done:
		case <-time.After(10 * time.Second):
			p.problemf("client %d's process did not stop within 10s; killed", pr.client)
			pr.cmd.Process.Kill()
			<-pr.done
		}
	}
	p.wg.Wait()
}

// Problems returns what went wrong with the processes themselves: a
// process that exited on its own, or that could not be started.
func (p *Procs) Problems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.problems)
}

func (p *Procs) problemf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.mu.Lock()
	p.problems = append(p.problems, msg)
	p.mu.Unlock()
	p.cfg.History.Notef("%s", msg)
}

// Start starts a new process for client i. The client's previous process,
// if any, must have been killed; its kill ends as a fault here.
func (p *Procs) Start(i int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return errors.New("workload: the waiters are stopping")
	}
	if i < 0 || i >= p.cfg.Clients {
		return fmt.Errorf("workload: no client %d", i)
	}
	if old := p.cur[i]; old != nil && !old.killed {
		return fmt.Errorf("workload: client %d still runs", i)
	}
	cfg := ChildConfig{
		Client: i, Incarnation: p.starts[i], Addrs: p.cfg.Addrs(i), Key: p.cfg.Key,
		TTL: p.cfg.TTL, NodeTimeout: p.cfg.NodeTimeout, Guard: p.cfg.Guard, QueueLease: p.cfg.QueueLease,
		Wait: p.cfg.Wait, Pause: p.cfg.Pause, Backoff: p.cfg.Backoff, Seed: p.cfg.Seed,
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.cfg.Exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), ChildEnv+"="+string(b))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	pr := &proc{p: p, client: i, inc: p.starts[i], cmd: cmd, stdin: stdin, done: make(chan struct{}), hold: -1, tokens: map[string]bool{}}
	p.starts[i]++
	p.cur[i] = pr
	if id, ok := p.killFault[i]; ok {
		p.cfg.History.FaultEnd(id)
		delete(p.killFault, i)
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(pr.done)
		pr.read(stdout)
		err := cmd.Wait()
		pr.exited(err)
	}()
	return nil
}

// Waiter is a live process in a Lock call.
type Waiter struct {
	Client int
	Since  time.Duration // when its Lock call began
}

// Waiting returns the live processes in a Lock call, the longest waiting
// first: in a line ordered by arrival, the head first.
func (p *Procs) Waiting() []Waiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Waiter
	for _, pr := range p.cur {
		if pr != nil && !pr.killed && pr.waiting {
			out = append(out, Waiter{Client: pr.client, Since: pr.since})
		}
	}
	slices.SortFunc(out, func(a, b Waiter) int { return cmp.Compare(a.Since, b.Since) })
	return out
}

// Kill is what Kill found.
type Kill struct {
	Client int
	At     time.Duration
	// Waiting is set when the process was in a Lock call; the call is
	// recorded as an attempt with Killed set, ending at the kill.
	Waiting bool
	// Holding is set when the process held the lock; its hold lasts until
	// its validity ends.
	Holding bool
	// Blocked are the masters that still held one of its tokens after the
	// kill (an acquisition cut in the middle, or the lock it held), with
	// the moment the token expires there.
	Blocked map[int]time.Duration
}

// Kill sends SIGKILL to client i's process, waits until it is gone and its
// output read, and reads on every master whether one of its tokens is left
// on the key. The kill is a fault of the client, which ends when the
// client is started again; each master that keeps one of its tokens is a
// fault of that master ("dead token") until the token expires.
func (p *Procs) Kill(ctx context.Context, i int) (Kill, error) {
	h := p.cfg.History
	p.mu.Lock()
	if i < 0 || i >= p.cfg.Clients || p.cur[i] == nil || p.cur[i].killed {
		p.mu.Unlock()
		return Kill{}, fmt.Errorf("workload: client %d has no live process", i)
	}
	pr := p.cur[i]
	pr.killed = true
	pr.killAt = h.Now()
	p.killFault[i] = h.FaultStart(-1, i, "client killed", fmt.Sprintf("c%d SIGKILL", i))
	p.mu.Unlock()
	if err := pr.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return Kill{}, err
	}
	select {
	case <-pr.done:
	case <-ctx.Done():
		return Kill{}, ctx.Err()
	}
	p.mu.Lock()
	k := Kill{Client: i, At: pr.killAt, Waiting: pr.waiting, Holding: pr.hold >= 0, Blocked: map[int]time.Duration{}}
	tokens := pr.tokens
	p.mu.Unlock()
	for n, addr := range p.cfg.Masters {
		tok, pttl, err := readToken(ctx, addr, p.cfg.Key)
		if err != nil || !tokens[tok] || pttl <= 0 {
			continue
		}
		now := h.Now()
		k.Blocked[n] = now + pttl
		h.Span(n, history.AllClients, "dead token", fmt.Sprintf("n%d keeps c%d's token", n, i), k.At, now+pttl)
	}
	state := "between two calls"
	switch {
	case k.Holding:
		state = "holding the lock"
	case k.Waiting:
		state = "waiting in Lock"
	}
	h.Notef("client %d killed (SIGKILL) %s; masters left with its token: %v", i, state, k.Blocked)
	return k, nil
}

// readToken reads the plain token on key and its TTL from one master.
func readToken(ctx context.Context, addr, key string) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := redis.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", 0, err
	}
	defer conn.Close()
	tok, err := redis.String(redis.DoWithTimeout(conn, time.Second, "GET", key))
	if err != nil {
		return "", 0, err
	}
	ms, err := redis.Int64(redis.DoWithTimeout(conn, time.Second, "PTTL", key))
	if err != nil {
		return "", 0, err
	}
	return tok, time.Duration(ms) * time.Millisecond, nil
}

// send writes one line to the process's stdin; a dead process's pipe
// refuses it, which is fine.
func (pr *proc) send(line string) {
	pr.wmu.Lock()
	defer pr.wmu.Unlock()
	io.WriteString(pr.stdin, line+"\n")
}

// read handles the process's events until its stdout closes.
func (pr *proc) read(stdout io.Reader) {
	in := bufio.NewScanner(stdout)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for in.Scan() {
		var ev event
		if err := json.Unmarshal(in.Bytes(), &ev); err != nil {
			pr.p.problemf("client %d: unreadable event %q: %v", pr.client, in.Text(), err)
			continue
		}
		pr.handle(ev)
	}
}

func (pr *proc) handle(ev event) {
	p, h, key, i := pr.p, pr.p.cfg.History, pr.p.cfg.Key, pr.client
	switch ev.K {
	case "token":
		h.Token(i, ev.Token)
		p.mu.Lock()
		pr.tokens[ev.Token] = true
		p.mu.Unlock()
	case "wait":
		p.mu.Lock()
		pr.waiting, pr.since = true, p.at(ev.At)
		p.mu.Unlock()
	case "fail":
		p.mu.Lock()
		pr.waiting = false
		p.mu.Unlock()
		h.Attempt(history.Attempt{Client: i, Key: key, Start: p.at(ev.At), End: p.at(ev.End), Err: childErr(ev), Tries: ev.Tries})
	case "got":
		start, end := p.at(ev.At), p.at(ev.End)
		h.Attempt(history.Attempt{Client: i, Key: key, Token: ev.Token, Start: start, End: end, OK: true, Tries: ev.Tries})
		id := h.Acquire(history.Hold{Client: i, Key: key, Token: ev.Token, Fence: ev.Fence, Acquired: end, Until: p.at(ev.Until)})
		p.mu.Lock()
		pr.waiting, pr.hold, pr.fence = false, id, ev.Fence
		p.mu.Unlock()
		before := p.cfg.Set.Read(key)
		p.mu.Lock()
		pr.before = before
		p.mu.Unlock()
		pr.send(replyOK)
	case "write":
		p.mu.Lock()
		id, fence, before := pr.hold, pr.fence, pr.before
		p.mu.Unlock()
		if ev.Valid {
			elem := p.elems.Add(1)
			p.cfg.Set.Write(key, append(before, elem))
			h.Ack(elem)
			p.cfg.Store.Write(key, id, i, fence)
			h.UpdateHold(id, func(x *history.Hold) { x.Element = elem })
		} else {
			h.UpdateHold(id, func(x *history.Hold) { x.Skipped = true })
		}
		pr.send(replyOK)
	case "release":
		p.mu.Lock()
		id := pr.hold
		p.mu.Unlock()
		h.UpdateHold(id, func(x *history.Hold) { x.Released = p.at(ev.At) })
	case "released":
		p.mu.Lock()
		id := pr.hold
		pr.hold = -1
		p.mu.Unlock()
		var err error
		if ev.Err != "" {
			err = errors.New(ev.Err)
		}
		h.UpdateHold(id, func(x *history.Hold) { x.ReleaseErr, x.Done = err, true })
	case "note":
		h.Notef("client %d: %s", i, ev.Text)
	default:
		p.problemf("client %d: unknown event %q", i, ev.K)
	}
}

// exited records how the process ended: a Lock call cut by a kill, or a
// problem if nobody asked it to end.
func (pr *proc) exited(err error) {
	p := pr.p
	p.mu.Lock()
	killed, stopping, waiting, since, at := pr.killed, p.stopping, pr.waiting, pr.since, pr.killAt
	p.mu.Unlock()
	switch {
	case killed && waiting:
		p.cfg.History.Attempt(history.Attempt{Client: pr.client, Key: p.cfg.Key, Start: since, End: at, Err: ErrKilled, Killed: true})
	case !killed && !stopping:
		p.problemf("client %d's process (start %d) exited on its own: %v", pr.client, pr.inc, err)
	case !killed && err != nil:
		p.problemf("client %d's process (start %d) failed as it stopped: %v", pr.client, pr.inc, err)
	}
	pr.wmu.Lock()
	pr.stdin.Close()
	pr.wmu.Unlock()
}

// childErr rebuilds a waiter's error, keeping whether its ctx ended.
func childErr(ev event) error {
	switch ev.Kind {
	case "canceled":
		return fmt.Errorf("%w (in the waiter: %s)", context.Canceled, ev.Err)
	case "deadline":
		return fmt.Errorf("%w (in the waiter: %s)", context.DeadlineExceeded, ev.Err)
	}
	return errors.New(ev.Err)
}
