package otel

import (
	"errors"

	"go.opentelemetry.io/otel/metric"

	"github.com/quorumlock/quorumlock/redlock"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/quorumlock/quorumlock/otel"

// The instruments' names. docs/observability.md lists each with its kind,
// unit, attributes and Prometheus name.
const (
	MetricAttempts          = "quorumlock.lock.attempts"
	MetricAcquireDuration   = "quorumlock.lock.acquire.duration"
	MetricWaitDuration      = "quorumlock.lock.wait.duration"
	MetricExtensions        = "quorumlock.lock.extensions"
	MetricReleases          = "quorumlock.lock.releases"
	MetricHeldDuration      = "quorumlock.lock.held.duration"
	MetricHeld              = "quorumlock.lock.held"
	MetricLosses            = "quorumlock.lock.losses"
	MetricHandovers         = "quorumlock.lock.handovers"
	MetricWakeups           = "quorumlock.lock.wakeups"
	MetricFenceRaises       = "quorumlock.fence.raises"
	MetricMasterChanges     = "quorumlock.master.changes"
	MetricMasterState       = "quorumlock.master.state"
	MetricMasterQuarantined = "quorumlock.master.quarantined"
)

// The attributes. Each takes values from a fixed set, but AttrMaster, whose
// values are the client's masters (a Redis Cluster's shard masters for a
// cluster), and AttrKey, which only spans carry.
const (
	AttrOutcome   = "quorumlock.outcome"        // a redlock.Outcome
	AttrOperation = "quorumlock.operation"      // a redlock.Op
	AttrAuto      = "quorumlock.auto"           // an extension the client made on its own
	AttrMaster    = "quorumlock.master.address" // a master's address
	AttrState     = "quorumlock.master.state"   // a redlock.MasterState
	AttrReason    = "quorumlock.master.reason"  // why, from a fixed set (see redlock.MasterState)
	AttrKey       = "quorumlock.key"            // spans only: keys are unbounded

	AttrAttempt    = "quorumlock.attempt"
	AttrDuration   = "quorumlock.duration"
	AttrHeld       = "quorumlock.held"
	AttrMasters    = "quorumlock.votes.masters"
	AttrQuorum     = "quorumlock.votes.quorum"
	AttrGranted    = "quorumlock.votes.granted"
	AttrAbstained  = "quorumlock.votes.abstained"
	AttrRefused    = "quorumlock.votes.refused"
	AttrFailed     = "quorumlock.votes.failed"
	AttrUnanswered = "quorumlock.votes.unanswered"
	AttrRaised     = "quorumlock.fence.raised"
	AttrLagging    = "quorumlock.fence.lagging"
)

// The spans, one per public call.
const (
	SpanLock    = "redlock.Lock"
	SpanTryLock = "redlock.TryLock"
	SpanExtend  = "redlock.Extend"
	SpanRelease = "redlock.Release"
	SpanDo      = "redlock.Do"
)

// States are the values of quorumlock.master.state's state attribute: each
// master reports 1 for its state and 0 for the others.
var States = [...]redlock.MasterState{redlock.MasterUp, redlock.MasterDown, redlock.MasterFailing, redlock.MasterSilent}

// durationBuckets suit a lock: a round trip on a LAN is a millisecond or
// less, a wait for a busy key seconds.
var durationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

type instruments struct {
	attempts, extensions, releases, losses, handovers, wakeups, fenceRaises, masterChanges metric.Int64Counter
	acquire, wait, heldTime                                                                metric.Float64Histogram
	held                                                                                   metric.Int64UpDownCounter
	masterState, masterQuarantined                                                         metric.Int64ObservableGauge
}

func newInstruments(m metric.Meter) (instruments, error) {
	var ins instruments
	var errs [14]error
	ins.attempts, errs[0] = m.Int64Counter(MetricAttempts, metric.WithUnit("{attempt}"),
		metric.WithDescription("Acquisition attempts, by outcome."))
	ins.acquire, errs[1] = m.Float64Histogram(MetricAcquireDuration, metric.WithUnit("s"),
		metric.WithDescription("How long each acquisition attempt took, by outcome."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	ins.wait, errs[2] = m.Float64Histogram(MetricWaitDuration, metric.WithUnit("s"),
		metric.WithDescription("How long a Lock or TryLock call took, waiting included, by operation and outcome."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	ins.extensions, errs[3] = m.Int64Counter(MetricExtensions, metric.WithUnit("{extension}"),
		metric.WithDescription("Extensions, by outcome, and whether the client made them on its own."))
	ins.releases, errs[4] = m.Int64Counter(MetricReleases, metric.WithUnit("{release}"),
		metric.WithDescription("Release calls, by outcome."))
	ins.heldTime, errs[5] = m.Float64Histogram(MetricHeldDuration, metric.WithUnit("s"),
		metric.WithDescription("How long locks were held until released."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	ins.held, errs[6] = m.Int64UpDownCounter(MetricHeld, metric.WithUnit("{lock}"),
		metric.WithDescription("Locks held now: obtained, and neither released nor lost."))
	ins.losses, errs[7] = m.Int64Counter(MetricLosses, metric.WithUnit("{lock}"),
		metric.WithDescription("Locks lost while held."))
	ins.handovers, errs[8] = m.Int64Counter(MetricHandovers, metric.WithUnit("{handover}"),
		metric.WithDescription("Locks passed straight from a Release to a waiter of the same client, by outcome."))
	ins.wakeups, errs[9] = m.Int64Counter(MetricWakeups, metric.WithUnit("{wakeup}"),
		metric.WithDescription("Waiters of Lock woken to try again: by a release's announcement (woken) or by their timer."))
	ins.fenceRaises, errs[10] = m.Int64Counter(MetricFenceRaises, metric.WithUnit("{raise}"),
		metric.WithDescription("Acquisitions that raised lagging masters' fence counters, by outcome."))
	ins.masterChanges, errs[11] = m.Int64Counter(MetricMasterChanges, metric.WithUnit("{change}"),
		metric.WithDescription("Masters' changes of state, by master, state and reason."))
	ins.masterState, errs[12] = m.Int64ObservableGauge(MetricMasterState, metric.WithUnit("{master}"),
		metric.WithDescription("1 for each master's state (up, down, failing, silent), 0 for the others."))
	ins.masterQuarantined, errs[13] = m.Int64ObservableGauge(MetricMasterQuarantined, metric.WithUnit("{master}"),
		metric.WithDescription("1 while the restart guard keeps the master's votes out of the quorum."))
	return ins, errors.Join(errs[:]...)
}
