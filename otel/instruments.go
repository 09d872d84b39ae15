package otel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/quorumlock/quorumlock/internal/lockmetrics"
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
	SpanLock       = "redlock.Lock"
	SpanTryLock    = "redlock.TryLock"
	SpanLockAll    = "redlock.LockAll"
	SpanTryLockAll = "redlock.TryLockAll"
	SpanExtend     = "redlock.Extend"
	SpanRelease    = "redlock.Release"
	SpanDo         = "redlock.Do"
	SpanResume     = "redlock.Resume"
	// An RWLock's read holds; its write holds are SpanLock and SpanTryLock.
	SpanRLock    = "redlock.RLock"
	SpanTryRLock = "redlock.TryRLock"
	// A semaphore's permits.
	SpanAcquire    = "redlock.Acquire"
	SpanTryAcquire = "redlock.TryAcquire"
)

// States returns the values of quorumlock.master.state's state attribute:
// each master reports 1 for its state and 0 for the others.
func States() []redlock.MasterState { return lockmetrics.States() }

// instruments are the catalogue's, by ID (see internal/lockmetrics): the
// sums as int64 counters, the histograms as float64 ones in seconds, the
// gauges observed.
type instruments struct {
	counters   map[lockmetrics.ID]metric.Int64Counter
	upDowns    map[lockmetrics.ID]metric.Int64UpDownCounter
	histograms map[lockmetrics.ID]metric.Float64Histogram
	gauges     map[lockmetrics.ID]metric.Int64ObservableGauge
}

func newInstruments(m metric.Meter) (instruments, error) {
	ins := instruments{
		counters:   map[lockmetrics.ID]metric.Int64Counter{},
		upDowns:    map[lockmetrics.ID]metric.Int64UpDownCounter{},
		histograms: map[lockmetrics.ID]metric.Float64Histogram{},
		gauges:     map[lockmetrics.ID]metric.Int64ObservableGauge{},
	}
	var errs []error
	for _, in := range lockmetrics.Catalogue() {
		var err error
		switch in.Kind {
		case lockmetrics.Counter:
			ins.counters[in.ID], err = m.Int64Counter(in.Name, metric.WithUnit(in.Unit), metric.WithDescription(in.Description))
		case lockmetrics.UpDownCounter:
			ins.upDowns[in.ID], err = m.Int64UpDownCounter(in.Name, metric.WithUnit(in.Unit), metric.WithDescription(in.Description))
		case lockmetrics.Histogram:
			ins.histograms[in.ID], err = m.Float64Histogram(in.Name, metric.WithUnit(in.Unit), metric.WithDescription(in.Description),
				metric.WithExplicitBucketBoundaries(lockmetrics.Buckets()...))
		case lockmetrics.Gauge:
			ins.gauges[in.ID], err = m.Int64ObservableGauge(in.Name, metric.WithUnit(in.Unit), metric.WithDescription(in.Description))
		}
		errs = append(errs, err)
	}
	return ins, errors.Join(errs...)
}

// observables lists the gauges, for the callback's registration.
func (ins instruments) observables() []metric.Observable {
	var out []metric.Observable
	for _, g := range ins.gauges {
		out = append(out, g)
	}
	return out
}

// set is the attribute set of a measurement's attributes.
func set(attrs []lockmetrics.Attr) attribute.Set {
	kvs := make([]attribute.KeyValue, len(attrs))
	for i, a := range attrs {
		kvs[i] = attribute.String(a.Key, a.Value)
	}
	return attribute.NewSet(kvs...)
}

// record adds one measurement to its instrument.
func (ins instruments) record(ctx context.Context, id lockmetrics.ID, v float64, attrs ...lockmetrics.Attr) {
	opt := metric.WithAttributeSet(set(attrs))
	if c, ok := ins.counters[id]; ok {
		c.Add(ctx, int64(v), opt)
	} else if u, ok := ins.upDowns[id]; ok {
		u.Add(ctx, int64(v), opt)
	} else if h, ok := ins.histograms[id]; ok {
		h.Record(ctx, v, opt)
	}
}
