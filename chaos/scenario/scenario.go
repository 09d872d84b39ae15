package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/chaos/check"
	"github.com/quorumlock/quorumlock/chaos/cluster"
	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/chaos/workload"
	"github.com/quorumlock/quorumlock/redlock"
)

// Scenario is one fault story with its expected outcome.
type Scenario struct {
	ID   string // "04a": the number, and a letter for variants
	Name string // short, for file names and test names
	// Shows says in one sentence what the scenario demonstrates.
	Shows string
	// Expected says in a few words the outcome the scenario asserts.
	Expected string

	Nodes, Clients int
	// Shards, when positive, makes every node a Redis Cluster of that many
	// shard masters, each with ShardReplicas replicas (the process backend
	// only; see cluster.Sharded).
	Shards, ShardReplicas int
	// Keys are the lock keys the clients contend for, each attempt on one
	// at random; nil means the one key "chaos-<ID>".
	Keys []string
	TTL  time.Duration
	// NodeTimeout is the clients' per-master timeout; 0 means 100ms, twice
	// the library's default, so that a loaded test machine does not turn
	// every scheduling hiccup into a timeout. The library caps it at TTL/10.
	NodeTimeout time.Duration
	// Run is how long the workload runs at least; it goes on until Inject
	// returns.
	Run         time.Duration
	Persistence cluster.Persistence
	// Replicas are the masters that get a replica, for a failover.
	Replicas []int
	// Guard leaves the restart guard on, as the library's default does.
	// Scenarios that are not about restarts turn it off so that freshly
	// started masters vote at once.
	Guard bool
	// WarmUp makes every client take and release the lock once before the
	// run, which with the guard on waits until the masters have been up for
	// longer than the guard window.
	WarmUp bool

	// Mode is how the clients take the lock: TryLock (the default), Lock or
	// Do.
	Mode workload.Mode
	// Workers is how many goroutines each client runs; 0 means one.
	Workers int
	// MaxOps bounds each client's operations; 0 means 5000, more than a
	// run of a few seconds makes.
	MaxOps int
	// Wait bounds each Lock or Do call's wait for the lock.
	Wait time.Duration
	// HoldFor is how long a Do holder keeps the lock.
	HoldFor time.Duration
	// LateWrite makes a Do holder told of its loss write once more, late.
	LateWrite bool
	// Stagger delays the start of client i by i times Stagger.
	Stagger time.Duration
	// Unguarded makes the fenced store skip the fencing guard, so that it
	// accepts every write: C3's negative control.
	Unguarded bool
	// Processes runs each client as a process of its own, one goroutine
	// looping Lock within Wait (workload.Procs), instead of inside the test
	// process; Env.Procs kills and starts them. The test binary must run
	// workload.ChildMain when workload.IsChild (see TestMain).
	Processes bool
	// QueueLease is the client processes' lease of a place in line
	// (redlock.WithQueueLease); 0 leaves the library's default.
	QueueLease time.Duration
	// Waits, when set, has checker C5 judge the run's Lock calls with these
	// bounds (Result.C5).
	Waits *check.WaitBounds
	// Permits, when above 0, makes the keys semaphores of that many
	// permits, which the clients take with Acquire (Mode is LockMode).
	// Checker C6 judges the run instead of C1, and C2 and C3, whose single
	// holder does not apply, are not judged.
	Permits int
	// ReadWrite makes the key an RWLock's, whose holds the clients take
	// (Mode is LockMode), three reads to one write. Checker C7 judges the
	// run instead of C1, and C2 and C3 are not judged.
	ReadWrite bool
	// Sets, when set, are key sets the clients take at once with LockAll
	// (Mode is LockMode), one drawn at random each time; Keys lists every
	// key in them. Checker C1 judges each key's holds; C2 and C3 are not
	// judged.
	Sets [][]string
	// Masters, when set, lists the masters each client is given, by index:
	// a control gives clients sets that disagree. nil gives every client
	// all of them.
	Masters [][]int
	// SemaphoreOptions are the clients' options for their semaphores.
	SemaphoreOptions []redlock.SemaphoreOption

	// Setup runs before the workload, e.g. to partition the clients.
	Setup func(ctx context.Context, e *Env) error
	// Inject runs while the workload runs and injects the faults. It should
	// heal what it breaks, unless leaving it broken is the point.
	Inject func(ctx context.Context, e *Env) error
	// Expect checks the result and returns what did not go as expected.
	Expect func(r *Result) []string
}

// Title is "04a restart-guard-off".
func (s *Scenario) Title() string { return s.ID + " " + s.Name }

// keys returns the lock keys of a run; the first is the one C4's liveness
// check asks for.
func (s *Scenario) keys() []string {
	if len(s.Keys) > 0 {
		return s.Keys
	}
	return []string{"chaos-" + s.ID}
}

// nodeTimeout returns the node timeout the clients use.
func (s *Scenario) nodeTimeout() time.Duration {
	if s.NodeTimeout > 0 {
		return s.NodeTimeout
	}
	return min(100*time.Millisecond, s.TTL/10)
}

// Env is what Setup and Inject work with.
type Env struct {
	Scenario *Scenario
	// Cluster records every fault it injects in the history.
	Cluster  cluster.Cluster
	History  *history.History
	Gate     *workload.Gate
	Workload *workload.Workload // nil during Setup, and with Processes
	Procs    *workload.Procs    // with Processes; nil during Setup
	Store    *workload.Fenced

	problems []string
	marks    map[string]time.Duration
}

// Mark records the current time under name, for Expect to read from
// Result.Marks, and returns it.
func (e *Env) Mark(name string) time.Duration {
	now := e.History.Now()
	e.MarkAt(name, now)
	return now
}

// MarkAt records t, a time on the run's clock, under name.
func (e *Env) MarkAt(name string, t time.Duration) {
	if e.marks == nil {
		e.marks = map[string]time.Duration{}
	}
	e.marks[name] = t
}

// Deadline returns a context that ends at t on the run's clock.
func (e *Env) Deadline(ctx context.Context, t time.Duration) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, e.History.Epoch().Add(t))
}

// Failf records an expectation that failed while injecting, such as a
// check that must be made at a precise moment.
func (e *Env) Failf(format string, args ...any) {
	e.problems = append(e.problems, fmt.Sprintf(format, args...))
}

// Notef adds a line to the run's notes.
func (e *Env) Notef(format string, args ...any) { e.History.Notef(format, args...) }

// Sleep waits d, or returns ctx's error.
func (e *Env) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Scan lists the lock keys on every master that answers, past every link
// fault (on every shard master where the nodes are Redis Clusters), and the
// failed attempts' tokens among them.
func (e *Env) Scan(ctx context.Context) (check.Residue, []error) {
	var keys []check.KeyState
	var errs []error
	if sh, ok := e.Cluster.(cluster.Sharded); ok {
		nodes := make([][]string, sh.Size())
		for n := range nodes {
			ms, err := sh.Masters(n)
			if err != nil {
				errs = append(errs, fmt.Errorf("scan node %d: %w", n, err))
			}
			nodes[n] = ms
		}
		ks, serrs := check.ScanShards(ctx, nodes)
		keys, errs = ks, append(errs, serrs...)
	} else {
		keys, errs = check.Scan(ctx, direct(e.Cluster))
	}
	rec := e.History.Snapshot()
	return check.Leftovers(keys, rec.FailedTokens()), errs
}

// Result is the outcome of one run of a scenario on one backend.
type Result struct {
	Scenario *Scenario
	Backend  string
	// Store is the database that decided the fenced writes C3 judges.
	Store  string
	Record history.Record
	Wall   time.Duration

	C1 []check.Violation
	// C6 is checker C6's verdict, for semaphores (Scenario.Permits).
	C6 []check.Excess
	// C7 is checker C7's verdict, for readers-writer locks
	// (Scenario.ReadWrite).
	C7 []check.Violation
	C2 check.LostWrites
	C3 check.Fencing
	C4 check.Residue
	// Live is C4's liveness half.
	Live check.Liveness
	// C5 is checker C5's verdict on the Lock calls, when the scenario
	// asks for it (Scenario.Waits).
	C5 *check.Waits
	// ScanErrs are the masters C4 could not read (those left down).
	ScanErrs []error
	// ScanAt is when C4 listed the masters' keys.
	ScanAt time.Duration

	Attempts, Locks int
	P50, P99        time.Duration // latency of the acquisition attempts

	// Marks are the moments Inject marked, by name.
	Marks map[string]time.Duration

	// Problems are the expectations that failed; empty means the scenario
	// went as expected.
	Problems []string
}

// Pass reports whether the scenario went as expected.
func (r *Result) Pass() bool { return len(r.Problems) == 0 }
