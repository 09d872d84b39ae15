// Package lockmetrics is the catalogue of the lock's metrics, defined once:
// each instrument's name, kind, unit and attributes, and how a
// redlock.Event becomes measurements of them. The otel module builds its
// OpenTelemetry instruments from it; the command serves the same metrics
// as a Prometheus text exposition of its own (see Registry), under the
// names the OpenTelemetry Prometheus exporter gives them, so that neither
// the library nor the command depends on OpenTelemetry.
package lockmetrics
