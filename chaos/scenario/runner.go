package scenario

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/chaos/check"
	"github.com/quorumlock/quorumlock/chaos/cluster"
	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/chaos/workload"
	"github.com/quorumlock/quorumlock/internal/slot"
	"github.com/quorumlock/quorumlock/redlock"
)

// Bounds of one run.
const (
	// retryBudget is what C4's liveness allows on top of one TTL.
	retryBudget = 2 * time.Second
	// injectSlack is how much longer than Run an Inject may take.
	injectSlack = 30 * time.Second
	// warmUpLimit bounds the warm-up of each client.
	warmUpLimit = 20 * time.Second
	// maxOps bounds each client's operations in one run.
	maxOps = 5000
	// doStep is the longest pause between two rounds of writes of a Do
	// holder.
	doStep = 100 * time.Millisecond
)

// direct returns every master's own address, past the links.
func direct(c cluster.Cluster) []string {
	addrs := make([]string, c.Size())
	for i := range addrs {
		addrs[i] = c.Direct(i)
	}
	return addrs
}

// Run plays s on a new cluster of backend b, with its fenced store on a new
// database from stores, and returns the outcome. Every container, process,
// proxy, client and database it starts is removed through tb.Cleanup. An error means the run itself could not be made; a scenario
// that went otherwise than expected is a Result with Problems.
func Run(ctx context.Context, tb testing.TB, b cluster.Backend, s *Scenario, seed uint64, stores *Stores) (*Result, error) {
	began := time.Now()
	c, err := b.Start(ctx, tb, cluster.Spec{
		Nodes: s.Nodes, Clients: s.Clients, Persistence: s.Persistence, Replicas: s.Replicas,
		Shards: s.Shards, ShardReplicas: s.ShardReplicas,
	})
	if err != nil {
		return nil, err
	}
	h := history.New()
	rc := record(c, h)
	keys := s.keys()
	clients := make([]*redlock.Client, s.Clients)
	for i := range clients {
		if clients[i], err = newClient(s.addrsOf(c, i), s, h, i); err != nil {
			return nil, err
		}
		tb.Cleanup(func() { clients[i].Close() })
	}
	acquire, err := s.holds(clients, keys)
	if err != nil {
		return nil, err
	}
	db := stores.New(tb)
	newStore := workload.NewFenced
	if s.Unguarded {
		newStore = workload.NewUnguarded
	}
	store, err := newStore(ctx, h, db.DB, db.Dialect)
	if err != nil {
		return nil, fmt.Errorf("fenced store: %w", err)
	}
	env := &Env{Scenario: s, Cluster: recordSharded(rc), History: h, Gate: &workload.Gate{}, Store: store}
	if s.Setup != nil {
		if err := s.Setup(ctx, env); err != nil {
			return nil, fmt.Errorf("setup: %w", err)
		}
	}
	if s.WarmUp {
		if err := warmUp(ctx, clients, keys, s.TTL); err != nil {
			return nil, err
		}
	}
	if s.Processes && s.Guard {
		// Each client process starts with a restart guard of its own, which
		// reads the masters' uptime from INFO in whole seconds, and as a
		// second less: wait until every master is old enough for it, so
		// that no process begins by waiting for the guard. The masters
		// started before the run's clock.
		env.Sleep(ctx, guardOut(s.TTL)-h.Now())
	}
	set := &workload.Set{}
	masters := direct(c)
	run, err := newWork(s, c, env, workload.Config{
		Keys: keys, TTL: s.TTL, Clients: clients, History: h, Set: set, Store: store, Gate: env.Gate,
		Seed: seed, MaxOps: cmp.Or(s.MaxOps, maxOps), Pause: workPause, Backoff: workBackoff,
		CatchBound: 4*s.TTL + 2*time.Second,

		Mode: s.Mode, Workers: s.Workers, Wait: s.Wait,
		HoldFor: s.HoldFor, Step: doStep, LateWrite: s.LateWrite, Stagger: s.Stagger,
		FenceOf: fenceReader(masters, keys[0], clients[0].Quorum(), s.nodeTimeout()),
		Acquire: acquire,
	})
	if err != nil {
		return nil, err
	}

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	workDone := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(workDone)
		run(wctx)
	}()
	if s.Inject != nil {
		ictx, cancel := context.WithTimeout(ctx, s.Run+injectSlack)
		if err := s.Inject(ictx, env); err != nil {
			env.Failf("inject: %v", err)
		}
		cancel()
	}
	if left := s.Run - time.Since(start); left > 0 {
		env.Sleep(ctx, left)
	}
	stop()
	<-workDone
	if err := rc.healAll(context.WithoutCancel(ctx)); err != nil {
		env.Failf("heal: %v", err)
	}

	r := &Result{Scenario: s, Backend: c.Backend(), Store: stores.Name()}
	r.C4, r.ScanErrs, r.ScanAt, r.Live = residueAndLiveness(ctx, env, s)
	if env.Procs != nil {
		env.problems = append(env.problems, env.Procs.Problems()...)
	}
	if s.Waits != nil {
		rec := h.Snapshot()
		w := check.Waiting(rec.Attempts, rec.Holds, quorumDown(s, rec.Faults, h.Now()), *s.Waits)
		r.C5 = &w
		h.Notef("%s", w5Summary(w))
	}
	r.Record = h.Snapshot()
	switch {
	case s.Permits > 0:
		r.C6 = check.Capacity(r.Record.Holds, s.Permits)
	case s.ReadWrite:
		r.C7 = check.Writers(r.Record.Holds)
	default:
		r.C1 = check.Exclusion(r.Record.Holds)
	}
	r.C2 = check.Lost(r.Record.Acked, set.All())
	r.C3 = check.Fenced(r.Record.Holds, r.Record.Writes)
	r.Problems = append(r.Problems, storeAgrees(ctx, store, r.Record.Writes)...)
	r.Problems = append(r.Problems, check.Pace(r.Record.Attempts)...)
	r.Attempts, r.Locks = len(r.Record.Attempts), len(r.Record.Holds)
	r.P50, r.P99 = latencies(r.Record.Attempts)
	r.Marks = env.marks
	r.Problems = append(r.Problems, env.problems...)
	if s.Expect != nil {
		r.Problems = append(r.Problems, s.Expect(r)...)
	}
	r.Wall = time.Since(began)
	return r, nil
}

// The workload's critical section and backoff.
const (
	workPause   = 20 * time.Millisecond
	workBackoff = 30 * time.Millisecond
)

// newWork returns the function that runs the scenario's workload until
// its ctx is done: the clients inside the test process, or, with
// Processes, one process per client (Env.Procs), with the same critical
// section.
func newWork(s *Scenario, c cluster.Cluster, env *Env, cfg workload.Config) (func(context.Context), error) {
	if !s.Processes {
		w, err := workload.New(cfg)
		if err != nil {
			return nil, err
		}
		env.Workload = w
		return w.Run, nil
	}
	if s.Mode != workload.LockMode || len(cfg.Keys) != 1 || s.Workers > 1 {
		return nil, errors.New("scenario: client processes loop Lock on one key, one goroutine each")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p, err := workload.NewProcs(workload.ProcsConfig{
		Exe: exe, Clients: s.Clients, Addrs: c.Addrs, Masters: direct(c), Key: cfg.Keys[0],
		TTL: s.TTL, NodeTimeout: s.nodeTimeout(), Guard: s.Guard, QueueLease: s.QueueLease,
		Wait: s.Wait, Pause: cfg.Pause, Backoff: cfg.Backoff, Seed: cfg.Seed,
		History: cfg.History, Set: cfg.Set, Store: cfg.Store,
	})
	if err != nil {
		return nil, err
	}
	env.Procs = p
	return p.Run, nil
}

// newClient returns one workload client: its own pools over its own links,
// the scenario's node timeout and guard, tokens recorded in h, and the
// library's Info and Warn messages kept as notes.
func newClient(addrs []string, s *Scenario, h *history.History, i int) (*redlock.Client, error) {
	opts := []redlock.Option{
		redlock.WithNodeTimeout(s.nodeTimeout()),
		redlock.WithTokenGenerator(workload.Tokens(h, i)),
		redlock.WithLogger(slog.New(notes{h: h, client: i})),
		redlock.WithObserver(workload.Tries{}),
	}
	if !s.Guard {
		opts = append(opts, redlock.WithRestartGuard(0))
	}
	return redlock.NewFromAddrs(addrs, opts...)
}

// addrsOf returns client i's masters: every one, or those Masters gives it.
func (s *Scenario) addrsOf(c cluster.Cluster, i int) []string {
	all := c.Addrs(i)
	if s.Masters == nil {
		return all
	}
	addrs := make([]string, len(s.Masters[i]))
	for j, n := range s.Masters[i] {
		addrs[j] = all[n]
	}
	return addrs
}

// holds returns, for a semaphore, a readers-writer or a key-set scenario,
// the function that takes a hold for a client in place of Lock: a permit
// of each client's semaphore of Permits on the key; a hold of its RWLock,
// a read three times in four; or one of Sets, all at once. It returns nil
// otherwise.
func (s *Scenario) holds(clients []*redlock.Client, keys []string) (func(context.Context, int, string, *rand.Rand) (*redlock.Lock, bool, error), error) {
	if s.Sets != nil {
		return func(ctx context.Context, i int, _ string, rng *rand.Rand) (*redlock.Lock, bool, error) {
			set := s.Sets[0]
			if rng != nil {
				set = s.Sets[rng.IntN(len(s.Sets))]
			}
			l, err := clients[i].LockAll(ctx, set, s.TTL)
			return l, false, err
		}, nil
	}
	if s.Permits == 0 && !s.ReadWrite {
		return nil, nil
	}
	if len(keys) != 1 {
		return nil, errors.New("scenario: a semaphore or readers-writer scenario has one key")
	}
	if s.ReadWrite {
		rws := make([]*redlock.RWLock, len(clients))
		for i, c := range clients {
			var err error
			if rws[i], err = c.RWLock(keys[0]); err != nil {
				return nil, fmt.Errorf("readers-writer lock of client %d: %w", i, err)
			}
		}
		return func(ctx context.Context, i int, _ string, rng *rand.Rand) (*redlock.Lock, bool, error) {
			if rng == nil || rng.IntN(4) == 0 {
				l, err := rws[i].Lock(ctx, s.TTL)
				return l, false, err
			}
			l, err := rws[i].RLock(ctx, s.TTL)
			return l, true, err
		}, nil
	}
	sems := make([]*redlock.Semaphore, len(clients))
	for i, c := range clients {
		var err error
		if sems[i], err = c.Semaphore(keys[0], s.Permits, s.SemaphoreOptions...); err != nil {
			return nil, fmt.Errorf("semaphore of client %d: %w", i, err)
		}
	}
	return func(ctx context.Context, i int, _ string, _ *rand.Rand) (*redlock.Lock, bool, error) {
		l, err := sems[i].Acquire(ctx, s.TTL)
		return l, true, err
	}, nil
}

// warmUp has every client take and release a lock in the slot of each key
// once, so that runs with the restart guard on begin with masters old
// enough to vote: where a node is a Redis Cluster, the guard judges each
// key by the shard master that owns its slot.
func warmUp(ctx context.Context, clients []*redlock.Client, keys []string, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, warmUpLimit)
	defer cancel()
	for i, c := range clients {
		for _, k := range keys {
			l, err := c.Lock(ctx, warmUpKey(k), ttl)
			if err != nil {
				return fmt.Errorf("warm-up of client %d: %w", i, err)
			}
			if err := l.Release(ctx); err != nil {
				return fmt.Errorf("warm-up of client %d: release: %w", i, err)
			}
		}
	}
	return nil
}

// warmUpKey returns a key of key's hash slot other than key: with key's
// own hash tag, with key itself made the tag, or with a tag of the slot.
func warmUpKey(key string) string {
	s := slot.Of(key)
	for _, k := range []string{key + "-warmup", "{" + key + "}-warmup"} {
		if slot.Of(k) == s {
			return k
		}
	}
	tag, _ := slot.TagFor(s) // s is a valid slot
	return "{" + tag + "}" + key + "-warmup"
}

// residueAndLiveness is checker C4. It waits until one TTL has passed since
// the last fault healed, lists what is left on the masters, then asks a new
// client for the lock and times it.
func residueAndLiveness(ctx context.Context, e *Env, s *Scenario) (check.Residue, []error, time.Duration, check.Liveness) {
	rec := e.History.Snapshot()
	healed := e.History.Now()
	for _, f := range rec.Faults {
		if !f.Open() && f.End > healed {
			healed = f.End
		}
	}
	wait := healed + s.TTL + 2*s.nodeTimeout() - e.History.Now()
	if wait > 0 {
		e.Sleep(ctx, wait)
	}
	scanAt := e.History.Now()
	residue, scanErrs := e.Scan(ctx)

	live := check.Liveness{Bound: s.TTL + retryBudget}
	c, err := newClient(direct(e.Cluster), s, e.History, -1)
	if err != nil {
		live.Err = err
		return residue, scanErrs, scanAt, live
	}
	defer c.Close()
	lctx, cancel := context.WithTimeout(ctx, live.Bound)
	defer cancel()
	start := time.Now()
	var l *redlock.Lock
	if s.Permits > 0 || s.ReadWrite {
		// A permit, or a write hold (drawn with no rng), which only a free
		// key grants.
		var acquire func(context.Context, int, string, *rand.Rand) (*redlock.Lock, bool, error)
		if acquire, err = s.holds([]*redlock.Client{c}, s.keys()); err == nil {
			l, _, err = acquire(lctx, 0, s.keys()[0], nil)
		}
	} else {
		l, err = c.Lock(lctx, s.keys()[0], s.TTL)
	}
	live.Took = time.Since(start)
	if err != nil {
		live.Err = err
		return residue, scanErrs, scanAt, live
	}
	live.OK = true
	if err := l.Release(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, redlock.ErrLockNotHeld) {
		live.Err = fmt.Errorf("release: %w", err)
	}
	return residue, scanErrs, scanAt, live
}

// latencies returns the median and 99th percentile of the attempts' latency.
func latencies(as []history.Attempt) (p50, p99 time.Duration) {
	if len(as) == 0 {
		return 0, 0
	}
	ds := make([]time.Duration, len(as))
	for i, a := range as {
		ds[i] = a.Latency()
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return at(0.50), at(0.99)
}

// storeAgrees checks that the fenced store's database committed exactly
// the writes the history lists as accepted, in the same order for each
// key, and that no write failed for another reason than a stale fence: C3
// replays the history, so it must be what the database decided. The order
// across keys is not compared: each key is a resource of its own, and the
// database commits writes to different ones at once.
func storeAgrees(ctx context.Context, store *workload.Fenced, writes []history.Write) []string {
	var out []string
	for _, err := range store.Errs() {
		out = append(out, fmt.Sprintf("C3: the fenced store failed a write: %v", err))
	}
	committed, err := store.Committed(ctx)
	if err != nil {
		return append(out, fmt.Sprintf("C3: reading the fenced store's log: %v", err))
	}
	listed, logged := map[string][]history.Write{}, map[string][]history.Write{}
	var keys []string
	for _, w := range writes {
		if w.Accepted {
			if _, ok := listed[w.Key]; !ok {
				keys = append(keys, w.Key)
			}
			listed[w.Key] = append(listed[w.Key], history.Write{Key: w.Key, Hold: w.Hold, Client: w.Client, Fence: w.Fence, Accepted: true})
		}
	}
	for _, w := range committed {
		if _, ok := listed[w.Key]; !ok {
			if _, ok := logged[w.Key]; !ok {
				keys = append(keys, w.Key)
			}
		}
		logged[w.Key] = append(logged[w.Key], w)
	}
	for _, k := range keys {
		if !slices.Equal(listed[k], logged[k]) {
			out = append(out, fmt.Sprintf("C3: the history lists %d accepted writes to %s, the database committed %d, or in another order", len(listed[k]), k, len(logged[k])))
		}
	}
	return out
}
