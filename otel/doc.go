// Package otel turns a redlock.Client's events into OpenTelemetry metrics
// and traces. It lives in a module of its own, so that the library's users
// who do not use OpenTelemetry never download it.
//
//	obs, err := otel.New() // the global MeterProvider and TracerProvider
//	c, err := redlock.NewFromAddrs(addrs, redlock.WithObserver(obs))
//
// Metrics follow OpenTelemetry's naming rules: dotted names, UCUM units, and
// attribute sets bounded by design: a lock's key, which is unbounded, is
// never a metric attribute (spans carry it). docs/observability.md lists
// every instrument, with the name the Prometheus exporter gives it.
package otel
