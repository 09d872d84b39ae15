package otel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures an Observer.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	meters  metric.MeterProvider
	tracers trace.TracerProvider
}

func defaultConfig() config {
	return config{meters: otel.GetMeterProvider(), tracers: otel.GetTracerProvider()}
}

// WithMeterProvider sets where the metrics go. Default
// otel.GetMeterProvider(), the global one when New is called. Must not be
// nil.
func WithMeterProvider(p metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meters = p })
}

// WithTracerProvider sets where the spans go. Default
// otel.GetTracerProvider(), the global one when New is called. Must not be
// nil.
func WithTracerProvider(p trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tracers = p })
}
