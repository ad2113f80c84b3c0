package main

// Dependencies of the admin endpoints (docs/metrics.md): the OpenTelemetry
// SDK records what core/metrics reports through the API, its Prometheus
// exporter turns the readings into Prometheus metrics on a registry of our
// own, and client_golang's promhttp serves them as text. They are the
// reference implementations of both standards and stay in this command:
// core requires the metrics API only, so an embedder exporting elsewhere
// never links them.

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

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

// adminServer serves core/health's endpoints (/healthz, /readyz,
// /metrics) on --admin-listen.
type adminServer struct {
	*health.Admin
	metrics *prometheusMetrics
	ln      net.Listener
	srv     *http.Server
}

// startAdmin listens on addr and serves the admin endpoints at once, so
// /healthz answers and /readyz says "starting" while the node starts.
func startAdmin(addr string, logger *slog.Logger) (*adminServer, error) {
	pm, err := newPrometheusMetrics()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	a := &adminServer{Admin: health.New(pm.handler), metrics: pm, ln: ln}
	a.srv = &http.Server{Handler: a.Admin, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := a.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			logger.Error("cellb serve: admin listener failed", "err", err)
		}
	}()
	return a, nil
}

// close stops the admin endpoints, after the node: until then /readyz
// answers 503 to say the node is going away.
func (a *adminServer) close(ctx context.Context) error {
	return errors.Join(a.srv.Shutdown(ctx), a.metrics.provider.Shutdown(ctx))
}
