package app

// Dependencies of the admin endpoints (docs/metrics.md): the OpenTelemetry
// SDK records what core/metrics reports through the API, and a manual
// reader hands its readings to cmd/cellb/internal/promtext, which writes
// them as Prometheus text. The SDK stays in this command: core requires
// the metrics API only, so an embedder exporting elsewhere never links it.
// The OpenTelemetry Prometheus exporter and client_golang are used by
// promtext's tests only (to show the text is the same): in the binary
// they brought client_model, expfmt, procfs and protobuf into every cold
// build.

import (
	"log/slog"
	"net/http"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/cellb/cellb/cmd/cellb/internal/promtext"
	"github.com/cellb/cellb/core/health"
)

// prometheusMetrics is an OpenTelemetry SDK meter provider whose readings
// are exposed as Prometheus text by handler: the node records through the
// OpenTelemetry API (core/metrics) and a scraper reads /metrics.
type prometheusMetrics struct {
	provider *sdkmetric.MeterProvider
	handler  http.Handler
}

// newPrometheusMetrics never fails today; the error stays so a reader that
// can fail to start needs no change to its callers.
func newPrometheusMetrics() (*prometheusMetrics, error) {
	// A reader of our own, collected on each scrape: only what the node
	// records (and the resource, as target_info) is exposed.
	reader := sdkmetric.NewManualReader()
	return &prometheusMetrics{
		provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		handler:  promtext.Handler{Reader: reader},
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
