package otel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/quorumlock/quorumlock/internal/lockmetrics"
	"github.com/quorumlock/quorumlock/redlock"
)

// Observer is a redlock.Observer that records metrics and spans. Make it
// with New, give it to the client with redlock.WithObserver, and Close it
// after the client.
type Observer struct {
	tracer  trace.Tracer
	ins     instruments
	reg     metric.Registration
	now     func() time.Time
	masters lockmetrics.Masters // what the events said last of each master, for the gauges
}

var _ redlock.Observer = (*Observer)(nil)

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
	o := &Observer{tracer: c.tracers.Tracer(ScopeName), ins: ins, now: time.Now}
	o.reg, err = meter.RegisterCallback(o.observeMasters, ins.observables()...)
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

// Observe records one event: its measurements (see internal/lockmetrics),
// and on the call's span an event, or the span's end.
func (o *Observer) Observe(ctx context.Context, ev redlock.Event) {
	o.masters.Note(ev)
	lockmetrics.Measure(ev, func(id lockmetrics.ID, v float64, attrs ...lockmetrics.Attr) {
		o.ins.record(ctx, id, v, attrs...)
	})
	outcome := attribute.String(AttrOutcome, string(ev.Outcome))
	switch ev.Kind {
	case redlock.KindAttempt:
		v := ev.Votes
		spanEvent(ctx, "attempt",
			attribute.Int(AttrAttempt, ev.Attempt),
			outcome,
			attribute.Float64(AttrDuration, ev.Duration.Seconds()),
			attribute.Int(AttrMasters, v.Masters),
			attribute.Int(AttrQuorum, v.Quorum),
			attribute.Int(AttrGranted, v.Granted),
			attribute.Int(AttrAbstained, v.Abstained),
			attribute.Int(AttrRefused, v.Refused),
			attribute.Int(AttrFailed, v.Failed),
			attribute.Int(AttrUnanswered, v.Unanswered))
	case redlock.KindCall:
		endSpan(ctx, ev)
	case redlock.KindLost:
		spanEvent(ctx, "lost", attribute.Float64(AttrHeld, ev.Held.Seconds()))
	case redlock.KindHandOver:
		spanEvent(ctx, "handover", outcome)
	case redlock.KindWake:
		spanEvent(ctx, "wake", outcome)
	case redlock.KindFenceRaise:
		spanEvent(ctx, "fence_raise", outcome,
			attribute.Int(AttrRaised, ev.Raised), attribute.Int(AttrLagging, ev.Lagging))
	}
}

// endSpan ends the call's span, which Start began.
func endSpan(ctx context.Context, ev redlock.Event) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(attribute.String(AttrOutcome, string(ev.Outcome)))
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

// observeMasters reports each master's state and quarantine.
func (o *Observer) observeMasters(_ context.Context, obs metric.Observer) error {
	o.masters.Observe(o.now(), func(id lockmetrics.ID, v float64, attrs ...lockmetrics.Attr) {
		obs.ObserveInt64(o.ins.gauges[id], int64(v), metric.WithAttributeSet(set(attrs)))
	})
	return nil
}

// spanName is the span of a call: "redlock.Lock", "redlock.TryLock", ...
func spanName(op redlock.Op) string {
	switch op {
	case redlock.OpLock:
		return SpanLock
	case redlock.OpTryLock:
		return SpanTryLock
	case redlock.OpLockAll:
		return SpanLockAll
	case redlock.OpTryLockAll:
		return SpanTryLockAll
	case redlock.OpExtend:
		return SpanExtend
	case redlock.OpRelease:
		return SpanRelease
	case redlock.OpDo:
		return SpanDo
	case redlock.OpResume:
		return SpanResume
	case redlock.OpRLock:
		return SpanRLock
	case redlock.OpTryRLock:
		return SpanTryRLock
	case redlock.OpAcquire:
		return SpanAcquire
	case redlock.OpTryAcquire:
		return SpanTryAcquire
	}
	return "redlock." + string(op)
}
