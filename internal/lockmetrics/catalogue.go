package lockmetrics

import "strings"

// Kind is an instrument's kind, as OpenTelemetry names them.
type Kind int8

// The kinds of instrument.
const (
	Counter       Kind = iota // monotonic sum
	UpDownCounter             // sum that goes up and down
	Histogram                 // distribution of durations, in seconds
	Gauge                     // observed value, per master
)

// ID names an instrument of the catalogue.
type ID int8

// The instruments.
const (
	Attempts ID = iota
	AcquireDuration
	WaitDuration
	Extensions
	Releases
	HeldDuration
	Held
	Losses
	Handovers
	Wakeups
	FenceRaises
	MasterChanges
	MasterState
	MasterQuarantined
	count // the number of instruments: the catalogue's test checks it lists each
)

// Instrument is one metric of the catalogue.
type Instrument struct {
	ID          ID
	Name        string // dotted, as OpenTelemetry names it
	Kind        Kind
	Unit        string // UCUM: "s", or an annotation such as "{attempt}"
	Description string
	Attrs       []string // the attribute keys its measurements carry
}

// The attribute keys of the metrics. Each takes values from a fixed set,
// but AttrMaster, whose values are the client's masters. A lock's key is
// never a metric attribute: keys are unbounded.
const (
	AttrOutcome   = "quorumlock.outcome"        // a redlock.Outcome
	AttrOperation = "quorumlock.operation"      // a redlock.Op
	AttrAuto      = "quorumlock.auto"           // "true" for an extension the client made on its own
	AttrMaster    = "quorumlock.master.address" // a master's address
	AttrState     = "quorumlock.master.state"   // a redlock.MasterState
	AttrReason    = "quorumlock.master.reason"  // why, from a fixed set (see redlock.MasterState)
)

// Catalogue returns every instrument, indexed by ID.
func Catalogue() []Instrument {
	out := []Instrument{
		{Attempts, "quorumlock.lock.attempts", Counter, "{attempt}",
			"Acquisition attempts, by outcome.", []string{AttrOutcome}},
		{AcquireDuration, "quorumlock.lock.acquire.duration", Histogram, "s",
			"How long each acquisition attempt took, by outcome.", []string{AttrOutcome}},
		{WaitDuration, "quorumlock.lock.wait.duration", Histogram, "s",
			"How long a call that takes a hold (Lock, TryLock, RLock, TryRLock, Acquire, TryAcquire, LockAll, TryLockAll) took, waiting included, by operation and outcome.", []string{AttrOperation, AttrOutcome}},
		{Extensions, "quorumlock.lock.extensions", Counter, "{extension}",
			"Extensions, by outcome, and whether the client made them on its own.", []string{AttrOutcome, AttrAuto}},
		{Releases, "quorumlock.lock.releases", Counter, "{release}",
			"Release calls, by outcome.", []string{AttrOutcome}},
		{HeldDuration, "quorumlock.lock.held.duration", Histogram, "s",
			"How long locks were held until released.", nil},
		{Held, "quorumlock.lock.held", UpDownCounter, "{lock}",
			"Locks held now: obtained or resumed, and neither released nor lost.", nil},
		{Losses, "quorumlock.lock.losses", Counter, "{lock}",
			"Locks lost while held.", nil},
		{Handovers, "quorumlock.lock.handovers", Counter, "{handover}",
			"Locks passed straight from a Release to a waiter of the same client, by outcome.", []string{AttrOutcome}},
		{Wakeups, "quorumlock.lock.wakeups", Counter, "{wakeup}",
			"Waiters of Lock woken to try again: by a release's announcement (woken) or by their timer.", []string{AttrOutcome}},
		{FenceRaises, "quorumlock.fence.raises", Counter, "{raise}",
			"Acquisitions that raised lagging masters' fence counters, by outcome.", []string{AttrOutcome}},
		{MasterChanges, "quorumlock.master.changes", Counter, "{change}",
			"Masters' changes of state, by master, state and reason.", []string{AttrMaster, AttrState, AttrReason}},
		{MasterState, "quorumlock.master.state", Gauge, "{master}",
			"1 for each master's state (up, down, failing, silent), 0 for the others.", []string{AttrMaster, AttrState}},
		{MasterQuarantined, "quorumlock.master.quarantined", Gauge, "{master}",
			"1 while the restart guard keeps the master's votes out of the quorum.", []string{AttrMaster}},
	}
	return out
}

// Buckets are the histograms' bucket boundaries, in seconds: a round trip on
// a LAN is a millisecond or less, a wait for a busy key seconds.
func Buckets() []float64 {
	return []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
}

// PrometheusName is the name the OpenTelemetry Prometheus exporter gives
// the instrument: dots as underscores, the unit "s" as "_seconds" (an
// annotation in braces adds nothing), and "_total" on a counter.
func (in Instrument) PrometheusName() string {
	name := Underscore(in.Name)
	if in.Unit == "s" {
		name += "_seconds"
	}
	if in.Kind == Counter {
		name += "_total"
	}
	return name
}

// Underscore turns a dotted name into a Prometheus one.
func Underscore(name string) string { return strings.ReplaceAll(name, ".", "_") }
