package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/redlock"
)

// Mode is how the clients take the lock.
type Mode int

const (
	// TryLockMode makes one attempt at a time, with the workload's own
	// backoff after a failure, so that every attempt is measured.
	TryLockMode Mode = iota
	// LockMode waits in Lock: release announcements, the client's local
	// line of goroutines, split votes resolved, backoff. An attempt is one
	// Lock call, bounded by Config.Wait.
	LockMode
	// DoMode runs a long critical section as Do's function, which the
	// library keeps extended; see do.go.
	DoMode
)

// String names the mode as the scenarios describe it.
func (m Mode) String() string {
	switch m {
	case LockMode:
		return "Lock"
	case DoMode:
		return "Do"
	}
	return "TryLock"
}

// Config says what the clients do.
type Config struct {
	// Keys are the lock keys the clients contend for; each attempt picks
	// one at random. Do (DoMode) takes one key.
	Keys    []string
	TTL     time.Duration
	Clients []*redlock.Client // one per client, index = client number
	History *history.History
	Set     *Set
	Store   *Fenced
	Gate    *Gate
	// Mode is how the clients take the lock; TryLockMode by default.
	Mode Mode
	// Workers is how many goroutines each client runs, each with its own
	// loop, all sharing the client's redlock.Client; 0 means one. Under
	// Lock, the goroutines of a client wait in its local line.
	Workers int
	// Wait bounds each Lock call's wait for the lock, and Do's (LockMode
	// and DoMode).
	Wait time.Duration
	// HoldFor is how long Do's function keeps the lock (DoMode).
	HoldFor time.Duration
	// Step is the longest pause between two rounds of writes in Do's
	// function (DoMode); each pause is random in [Step/2, Step].
	Step time.Duration
	// FenceOf returns the fence of the lock that token holds on the key, the
	// masters that hold the token, and whether the fence could be found
	// (DoMode): Do gives its function no lock, so neither its fence.
	FenceOf func(ctx context.Context, token string) (fence int64, masters []int, ok bool)
	// Stagger delays the start of client i by i times Stagger, so that the
	// first holder takes the lock without contenders.
	Stagger time.Duration
	// LateWrite makes a Do holder told of its loss make one more fenced
	// write once a newer holder has written, as a holder that ignored the
	// notice would (DoMode). The fenced store must reject it.
	LateWrite bool
	// Seed seeds each client's random pauses; the same seed gives the same
	// sequence of pauses, not the same run.
	Seed uint64
	// MaxOps bounds each client's operations.
	MaxOps int
	// Pause is the longest random pause between the read and the write of
	// the shared set. Jepsen's lock-set uses 0-20 ms.
	Pause time.Duration
	// Backoff is the longest wait after a failed attempt; the wait is
	// random in [Backoff/4, Backoff].
	Backoff time.Duration
	// CatchBound is the longest a caught holder stays frozen, so that a
	// scenario that forgets to resume it cannot hang the run.
	CatchBound time.Duration
	// Acquire, when set, takes key for client i in place of Lock
	// (LockMode): a semaphore's permit, or an RWLock's read or write hold,
	// drawn with rng. shared says whether others may hold the key beside
	// it. Such a hold only keeps the key for a random pause, with no writes
	// to the shared set or the fenced store, whose checks assume one holder.
	Acquire func(ctx context.Context, i int, key string, rng *rand.Rand) (l *redlock.Lock, shared bool, err error)
}

func (c Config) validate() error {
	switch {
	case len(c.Keys) == 0 || slices.Contains(c.Keys, "") || c.TTL <= 0:
		return errors.New("workload: need keys and a positive TTL")
	case len(c.Keys) != len(slices.Compact(slices.Sorted(slices.Values(c.Keys)))):
		return errors.New("workload: a key is listed twice")
	case c.Mode == DoMode && len(c.Keys) != 1:
		return errors.New("workload: Do holds one key")
	case len(c.Clients) == 0:
		return errors.New("workload: no clients")
	case c.History == nil || c.Set == nil || c.Store == nil || c.Gate == nil:
		return errors.New("workload: need a history, a set, a fenced store and a gate")
	case c.MaxOps <= 0 || c.Backoff <= 0 || c.CatchBound <= 0 || c.Pause < 0:
		return errors.New("workload: need positive MaxOps, Backoff and CatchBound, and a Pause >= 0")
	case c.Workers < 0:
		return errors.New("workload: Workers must not be negative")
	case c.Mode != TryLockMode && c.Wait <= 0:
		return fmt.Errorf("workload: %v needs a positive Wait", c.Mode)
	case c.Acquire != nil && c.Mode != LockMode:
		return errors.New("workload: Acquire takes holds in LockMode")
	case c.Mode == DoMode && (c.HoldFor <= 0 || c.Step <= 0 || c.FenceOf == nil):
		return errors.New("workload: Do needs a positive HoldFor and Step, and FenceOf")
	case c.Mode != LockMode && c.Workers > 1:
		// TryLock attempts and Do holds learn their token as the last one
		// their client generated.
		return fmt.Errorf("workload: %v runs one goroutine per client", c.Mode)
	}
	return nil
}

func (c Config) workers() int { return max(c.Workers, 1) }

// Workload is a set of clients contending for one key.
type Workload struct {
	cfg   Config
	valve valve
	elems atomic.Int64
}

// New returns a workload for cfg.
func New(cfg Config) (*Workload, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Workload{cfg: cfg}, nil
}

// Run runs every client's goroutines until ctx is done or each reached
// MaxOps, and returns when all have stopped. Releases and extensions that
// are under way when ctx ends still finish, each within its own bound.
func (w *Workload) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range w.cfg.Clients {
		for k := range w.cfg.workers() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.worker(ctx, i, k)
			}()
		}
	}
	wg.Wait()
}

// HoldOff stops the clients from starting new attempts and waits until the
// operations in flight are done, or ctx is done. Resume undoes it.
func (w *Workload) HoldOff(ctx context.Context) error { return w.valve.close(ctx) }

// Resume lets the clients go on after HoldOff.
func (w *Workload) Resume() { w.valve.open() }

// worker is goroutine k of client i.
func (w *Workload) worker(ctx context.Context, i, k int) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(i)|uint64(k)<<32))
	if !sleep(ctx, time.Duration(i)*w.cfg.Stagger) {
		return
	}
	for op := 0; op < w.cfg.MaxOps; op++ {
		if !w.valve.enter(ctx) {
			return
		}
		var held bool
		if w.cfg.Mode == DoMode {
			held = w.do(ctx, i, k, rng)
		} else {
			held = w.once(ctx, i, k, rng)
		}
		w.valve.leave()
		// After a failure, back off; after a release, give the others a
		// chance before trying again.
		wait := time.Duration(rng.Int64N(int64(time.Millisecond) * 3))
		if !held {
			wait = w.cfg.Backoff/4 + time.Duration(rng.Int64N(int64(w.cfg.Backoff*3/4)+1))
		}
		if !sleep(ctx, wait) {
			return
		}
	}
}

// once makes one attempt (TryLock, or Lock within Wait) and, if it got the
// lock, runs the critical section. It reports whether it got the lock.
func (w *Workload) once(ctx context.Context, i, k int, rng *rand.Rand) bool {
	h := w.cfg.History
	start := h.Now()
	key := w.cfg.Keys[0]
	if len(w.cfg.Keys) > 1 { // one key draws nothing, so a seed replays as before
		key = w.cfg.Keys[rng.IntN(len(w.cfg.Keys))]
	}
	var l *redlock.Lock
	var err error
	var token string
	var shared bool
	tries := 0
	if w.cfg.Mode == LockMode {
		lctx, cancel := context.WithTimeout(ctx, w.cfg.Wait)
		lctx, n := WithTries(lctx)
		if w.cfg.Acquire != nil {
			l, shared, err = w.cfg.Acquire(lctx, i, key, rng)
		} else {
			l, err = w.cfg.Clients[i].Lock(lctx, key, w.cfg.TTL)
		}
		cancel()
		tries = int(n.Load())
		if err == nil {
			token = l.Token() // the client's other goroutines make tokens too
		}
	} else {
		l, err = w.cfg.Clients[i].TryLock(ctx, key, w.cfg.TTL)
		token = h.LastToken(i)
	}
	end := h.Now()
	h.Attempt(history.Attempt{Client: i, Worker: k, Key: key, Token: token, Start: start, End: end, OK: err == nil, Err: err, Tries: tries})
	if err != nil {
		return false
	}
	// A set of keys taken at once (LockAll) is a hold of each of its keys.
	keys := l.Keys()
	holds := make([]history.Hold, len(keys))
	for j, key := range keys {
		holds[j] = history.Hold{
			Client: i, Worker: k, Key: key, Token: l.Token(), Fence: l.FenceOf(key),
			Shared: shared, Acquired: end, Until: h.At(l.Until()),
		}
		holds[j].ID = h.Acquire(holds[j])
	}
	w.critical(ctx, i, rng, l, holds)
	return true
}

// critical is the critical section: read the shared set, pause, check the
// validity, pass the gate, write the set back with one element more, write
// to the fenced store, and release. A holder caught at the gate also
// extends before it releases, which is how a paused client learns that its
// lock is gone.
func (w *Workload) critical(ctx context.Context, i int, rng *rand.Rand, l *redlock.Lock, holds []history.Hold) {
	h := w.cfg.History
	// Releases and extensions must happen even when the run is ending.
	after, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()

	if w.cfg.Acquire != nil {
		// Holders may share the key, or hold several: the critical section
		// only holds them.
		time.Sleep(time.Duration(rng.Int64N(int64(w.cfg.Pause) + 1)))
		w.release(after, l, holds...)
		return
	}
	hold := holds[0]
	before := w.cfg.Set.Read(hold.Key)
	time.Sleep(time.Duration(rng.Int64N(int64(w.cfg.Pause) + 1)))
	if l.Validity() <= 0 {
		h.UpdateHold(hold.ID, func(x *history.Hold) { x.Skipped = true })
	} else {
		caught := w.cfg.Gate.point(ctx, hold, w.cfg.CatchBound)
		elem := w.elems.Add(1)
		w.cfg.Set.Write(hold.Key, append(before, elem))
		h.Ack(elem)
		w.cfg.Store.Write(hold.Key, hold.ID, i, hold.Fence)
		h.UpdateHold(hold.ID, func(x *history.Hold) { x.Element, x.Caught = elem, caught })
		if caught {
			err := l.Extend(after, w.cfg.TTL)
			h.UpdateHold(hold.ID, func(x *history.Hold) { x.Extended, x.ExtendErr = true, err })
		}
	}
	w.release(after, l, hold)
}

// release releases l and records it in each of its holds.
func (w *Workload) release(ctx context.Context, l *redlock.Lock, holds ...history.Hold) {
	h := w.cfg.History
	now := h.Now()
	for _, hold := range holds {
		h.UpdateHold(hold.ID, func(x *history.Hold) { x.Released = now })
	}
	err := l.Release(ctx)
	for _, hold := range holds {
		h.UpdateHold(hold.ID, func(x *history.Hold) { x.ReleaseErr, x.Done = err, true })
	}
}

// sleep waits d or until ctx is done, and reports whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
