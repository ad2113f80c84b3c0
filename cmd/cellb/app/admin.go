package app

// Dependencies of the admin endpoints (docs/metrics.md): the OpenTelemetry
// SDK records what core/metrics reports through the API, its Prometheus
// exporter turns the readings into Prometheus metrics on a registry of our
// own, and client_golang's promhttp serves them as text. They are the
// reference implementations of both standards and stay in this command:
// core requires the metrics API only, so an embedder exporting elsewhere
// never links them.

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/cellb/cellb/core/health"
)

// prometheusMetrics is an OpenTelemetry SDK meter provider whose readings
// are exposed as Prometheus text by handler: the node records through the
// OpenTelemetry API (core/metrics) and a scraper reads /metrics.
type prometheusMetrics struct {
	provider *sdkmetric.MeterProvider
	handler  http.Handler
}

func newPrometheusMetrics() (*prometheusMetrics, error) {
	// A registry of our own, not the process-wide default: only what the
	// node records (and the exporter's target_info) is exposed.
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	return &prometheusMetrics{
		provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)),
		handler:  promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}),
	}, nil
}

// startAdmin serves core/health's endpoints on addr with the node's
// metrics as Prometheus text.
func startAdmin(addr string, logger *slog.Logger) (*health.Server, *prometheusMetrics, error) {
	pm, err := newPrometheusMetrics()
	if err != nil {
		return nil, nil, err
	}
	srv, err := health.Listen(addr, pm.handler, logger)
	if err != nil {
		return nil, nil, err
	}
	return srv, pm, nil
}
