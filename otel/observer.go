package otel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/quorumlock/quorumlock/redlock"
)

// Observer is a redlock.Observer that records metrics and spans. Make it
// with New, give it to the client with redlock.WithObserver, and Close it
// after the client.
type Observer struct {
	tracer trace.Tracer
	ins    instruments
	reg    metric.Registration
	now    func() time.Time

	mu      sync.Mutex
	masters map[string]*masterView // by address: the configured masters, or a cluster's shards
}

var _ redlock.Observer = (*Observer)(nil)

// masterView is what the events said last of one master.
type masterView struct {
	conn    redlock.MasterState // MasterUp, MasterDown or MasterFailing
	silent  bool
	quar    bool      // quarantined
	until   time.Time // the quarantine's end, when known
	reasons string    // why quarantined
}

// New returns an Observer that records through the options' providers:
// by default the global ones, otel.GetMeterProvider() and
// otel.GetTracerProvider().
func New(opts ...Option) (*Observer, error) {
	c := defaultConfig()
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: option %d is nil", redlock.ErrInvalid, i)
		}
		opt.apply(&c)
	}
	if c.meters == nil || c.tracers == nil {
		return nil, fmt.Errorf("%w: nil provider", redlock.ErrInvalid)
	}
	meter := c.meters.Meter(ScopeName)
	ins, err := newInstruments(meter)
	if err != nil {
		return nil, err
	}
	o := &Observer{tracer: c.tracers.Tracer(ScopeName), ins: ins, now: time.Now, masters: map[string]*masterView{}}
	o.reg, err = meter.RegisterCallback(o.observeMasters, ins.masterState, ins.masterQuarantined)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// Close stops the per-master gauges. The counters and histograms stay with
// the MeterProvider.
func (o *Observer) Close() error { return o.reg.Unregister() }

// Start begins the call's span, a child of the caller's span in ctx.
func (o *Observer) Start(ctx context.Context, op redlock.Op, key string) context.Context {
	ctx, _ = o.tracer.Start(ctx, spanName(op), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String(AttrKey, key)))
	return ctx
}

// Observe records one event.
func (o *Observer) Observe(ctx context.Context, ev redlock.Event) {
	switch ev.Kind {
	case redlock.KindAttempt:
		o.attempt(ctx, ev)
	case redlock.KindCall:
		o.call(ctx, ev)
	case redlock.KindExtend:
		o.ins.extensions.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(
			attribute.String(AttrOutcome, string(ev.Outcome)), attribute.Bool(AttrAuto, ev.Auto))))
	case redlock.KindLost:
		o.ins.losses.Add(ctx, 1)
		o.ins.held.Add(ctx, -1)
		spanEvent(ctx, "lost", attribute.Float64(AttrHeld, ev.Held.Seconds()))
	case redlock.KindHandOver:
		o.ins.handovers.Add(ctx, 1, outcomeOf(ev))
		spanEvent(ctx, "handover", attribute.String(AttrOutcome, string(ev.Outcome)))
	case redlock.KindWake:
		o.ins.wakeups.Add(ctx, 1, outcomeOf(ev))
		spanEvent(ctx, "wake", attribute.String(AttrOutcome, string(ev.Outcome)))
	case redlock.KindFenceRaise:
		o.ins.fenceRaises.Add(ctx, 1, outcomeOf(ev))
		spanEvent(ctx, "fence_raise", attribute.String(AttrOutcome, string(ev.Outcome)),
			attribute.Int(AttrRaised, ev.Raised), attribute.Int(AttrLagging, ev.Lagging))
	case redlock.KindMaster:
		o.master(ctx, ev)
	}
}

func outcomeOf(ev redlock.Event) metric.AddOption {
	return metric.WithAttributeSet(attribute.NewSet(attribute.String(AttrOutcome, string(ev.Outcome))))
}

func (o *Observer) attempt(ctx context.Context, ev redlock.Event) {
	set := metric.WithAttributeSet(attribute.NewSet(attribute.String(AttrOutcome, string(ev.Outcome))))
	o.ins.attempts.Add(ctx, 1, set)
	o.ins.acquire.Record(ctx, ev.Duration.Seconds(), set)
	if ev.Outcome == redlock.OutcomeObtained {
		o.ins.held.Add(ctx, 1)
	}
	v := ev.Votes
	spanEvent(ctx, "attempt",
		attribute.Int(AttrAttempt, ev.Attempt),
		attribute.String(AttrOutcome, string(ev.Outcome)),
		attribute.Float64(AttrDuration, ev.Duration.Seconds()),
		attribute.Int(AttrMasters, v.Masters),
		attribute.Int(AttrQuorum, v.Quorum),
		attribute.Int(AttrGranted, v.Granted),
		attribute.Int(AttrAbstained, v.Abstained),
		attribute.Int(AttrRefused, v.Refused),
		attribute.Int(AttrFailed, v.Failed),
		attribute.Int(AttrUnanswered, v.Unanswered))
}

// call ends the call's span, which Start began, and records the call.
func (o *Observer) call(ctx context.Context, ev redlock.Event) {
	outcome := attribute.String(AttrOutcome, string(ev.Outcome))
	switch ev.Op {
	case redlock.OpLock, redlock.OpTryLock:
		o.ins.wait.Record(ctx, ev.Duration.Seconds(), metric.WithAttributeSet(attribute.NewSet(
			attribute.String(AttrOperation, string(ev.Op)), outcome)))
	case redlock.OpRelease:
		o.ins.releases.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(outcome)))
		if ev.Outcome == redlock.OutcomeReleased || ev.Outcome == redlock.OutcomeHandedOver {
			o.ins.held.Add(ctx, -1)
			o.ins.heldTime.Record(ctx, ev.Held.Seconds())
		}
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(outcome)
	if ev.Op == redlock.OpRelease && ev.Held > 0 {
		span.SetAttributes(attribute.Float64(AttrHeld, ev.Held.Seconds()))
	}
	if ev.Err != nil && !errors.Is(ev.Err, context.Canceled) {
		span.RecordError(ev.Err)
		span.SetStatus(codes.Error, string(ev.Outcome))
	}
	span.End()
}

// spanEvent adds an event to the span of ctx, if it records.
func spanEvent(ctx context.Context, name string, attrs ...attribute.KeyValue) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// master records a master's change of state for the gauges.
func (o *Observer) master(ctx context.Context, ev redlock.Event) {
	o.ins.masterChanges.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(
		attribute.String(AttrMaster, ev.Master),
		attribute.String(AttrState, string(ev.State)),
		attribute.String(AttrReason, ev.Reason))))
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.masters[ev.Master]
	if m == nil {
		m = &masterView{conn: redlock.MasterUp}
		o.masters[ev.Master] = m
	}
	switch ev.State {
	case redlock.MasterUp, redlock.MasterDown, redlock.MasterFailing:
		m.conn = ev.State
	case redlock.MasterSilent:
		m.silent = true
	case redlock.MasterHeard:
		m.silent = false
	case redlock.MasterQuarantined:
		m.quar, m.until, m.reasons = true, ev.Until, ev.Reason
	case redlock.MasterVoting:
		m.quar, m.until, m.reasons = false, time.Time{}, ""
	}
}

// observeMasters reports each master's state and quarantine.
func (o *Observer) observeMasters(_ context.Context, obs metric.Observer) error {
	now := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	for addr, m := range o.masters {
		state := m.conn
		if m.silent {
			state = redlock.MasterSilent
		}
		for _, s := range States {
			v := int64(0)
			if s == state {
				v = 1
			}
			obs.ObserveInt64(o.ins.masterState, v, metric.WithAttributeSet(attribute.NewSet(
				attribute.String(AttrMaster, addr), attribute.String(AttrState, string(s)))))
		}
		q := int64(0)
		if m.quar && (m.until.IsZero() || now.Before(m.until)) {
			q = 1
		}
		obs.ObserveInt64(o.ins.masterQuarantined, q, metric.WithAttributeSet(attribute.NewSet(
			attribute.String(AttrMaster, addr))))
	}
	return nil
}

// spanName is the span of a call: "redlock.Lock", "redlock.TryLock", ...
func spanName(op redlock.Op) string {
	switch op {
	case redlock.OpLock:
		return SpanLock
	case redlock.OpTryLock:
		return SpanTryLock
	case redlock.OpExtend:
		return SpanExtend
	case redlock.OpRelease:
		return SpanRelease
	case redlock.OpDo:
		return SpanDo
	}
	return "redlock." + string(op)
}
