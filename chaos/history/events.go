package history

import "time"

// AllClients marks a fault that affects every client's link to a node, or
// the node itself.
const AllClients = -1

// Attempt is one call that tried to take the lock: one TryLock, or one
// Lock or Do with all the tries it made while it waited.
type Attempt struct {
	Client     int
	Worker     int           // the goroutine of the client that made it
	Key        string        // the lock key it asked for
	Token      string        // the token the attempt used
	Start, End time.Duration // on the run's clock
	OK         bool
	Err        error // why it failed; nil when OK
	// Killed is set when the client's process was killed (SIGKILL) while
	// the call waited: End is the moment of the kill, and the call never
	// returned.
	Killed bool
	// Tries is how many acquisition attempts the call made (Lock retries);
	// 0 where they were not counted.
	Tries int
}

// Latency is how long the attempt took.
func (a Attempt) Latency() time.Duration { return a.End - a.Start }

// Hold is one time a client held the lock, from the moment the acquisition
// returned to the moment the client began to release it.
type Hold struct {
	ID     int
	Client int
	Worker int // the goroutine of the client that held it
	Key    string
	Token  string
	Fence  int64
	// Shared is set for a hold others may hold the key beside: a
	// semaphore's permit, or an RWLock's read hold.
	Shared bool
	// Acquired is when the acquisition returned the lock.
	Acquired time.Duration
	// Until is the end of the validity window the library reported. Do
	// hands its function no lock, only a ctx that the library cancels when
	// the lock is lost; for a hold under Do (ByDo), Until is when the
	// function saw that ctx cancelled, or when it returned.
	Until time.Duration
	// ByDo is set for a hold taken and kept by Do, with auto-extension.
	ByDo bool
	// Masters are, for a hold under Do, the masters that held its token
	// when its function began, read from the masters themselves.
	Masters []int
	// Lost is set when the library reported the lock lost while it was
	// held: Do's function saw its ctx cancelled with cause ErrLockLost.
	Lost bool
	// Released is when the client began its release; 0 while it has not.
	Released time.Duration
	// Caught is set when the run froze this holder inside its critical
	// section, to stand for a process pause.
	Caught bool
	// Skipped is set when the holder found its validity gone before writing
	// and wrote nothing.
	Skipped bool
	// Element is the element this holder added to the shared set; 0 if none.
	Element int64
	// ExtendErr is the result of an extension made after the holder was
	// caught; nil if none was made or it succeeded.
	ExtendErr error
	// ReleaseErr is the result of the release, once Done; under Do, what Do
	// returned.
	ReleaseErr error
	// Done is set when the release returned.
	Done bool
	// Extended is set when an extension was attempted.
	Extended bool
}

// End is when the hold ended for mutual exclusion: its release, or the end
// of its validity if that came first. A holder that kept going past its
// validity was told the lock may be gone, so the overrun is not held
// against the lock.
func (h Hold) End() time.Duration {
	if h.Released > 0 && h.Released < h.Until {
		return h.Released
	}
	return h.Until
}

// Write is one write to the fenced store.
type Write struct {
	Seq      int    // the order in which the store handled it
	Key      string // the resource written: the writer's lock key
	Hold     int    // the Hold.ID of the writer
	Client   int
	Fence    int64
	At       time.Duration
	Accepted bool
}

// Fault is one fault injected into the cluster, or an instant event such as
// a clock jump (then End equals Start).
type Fault struct {
	ID     int
	Node   int
	Client int // AllClients unless the fault cuts one client's link only
	Kind   string
	Label  string
	Start  time.Duration
	End    time.Duration // 0 while the fault lasts
}

// Open reports whether the fault has not healed yet.
func (f Fault) Open() bool { return f.End == 0 }

// Note is a line of text the run wants in its report, stamped with time.
type Note struct {
	At   time.Duration
	Text string
}
