package promtext

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// recordGolden records a fixed set of instruments, one of each kind and
// unit core/metrics uses, on mp.
func recordGolden(t *testing.T, mp metric.MeterProvider) {
	t.Helper()
	ctx := context.Background()
	m := mp.Meter("github.com/cellb/cellb/core")
	turns, err := m.Int64Counter("cellb.test.turns", metric.WithUnit("{turn}"),
		metric.WithDescription(`turns run, a "quoted" \ backslash`+"\nand a newline"))
	if err != nil {
		t.Fatal(err)
	}
	turns.Add(ctx, 3, metric.WithAttributes(attribute.String("class", "Counter"), attribute.String("outcome", "ok")))
	turns.Add(ctx, 1, metric.WithAttributes(attribute.String("class", "Counter"), attribute.String("outcome", "error")))
	turns.Add(ctx, 2, metric.WithAttributes(attribute.String("class", "a \"q\" b\\c\nd"), attribute.String("cell.key", "k")))
	open, err := m.Int64UpDownCounter("cellb.test.open", metric.WithUnit("{cell}"), metric.WithDescription("cells open"))
	if err != nil {
		t.Fatal(err)
	}
	open.Add(ctx, 5)
	open.Add(ctx, -2)
	wait, err := m.Float64Histogram("cellb.test.wait.duration", metric.WithUnit("s"), metric.WithDescription("waits"),
		metric.WithExplicitBucketBoundaries(0.001, 0.01, 0.1, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{0.0005, 0.005, 0.005, 0.5, 7} {
		wait.Record(ctx, v, metric.WithAttributes(attribute.String("outcome", "ok")))
	}
	wait.Record(ctx, 0.05, metric.WithAttributes(attribute.String("outcome", "error")))
	if _, err := m.Float64ObservableGauge("cellb.test.age", metric.WithUnit("s"), metric.WithDescription("age"),
		metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error {
			o.Observe(2.5)
			return nil
		})); err != nil {
		t.Fatal(err)
	}
	busy, err := m.Float64Counter("cellb.test.busy", metric.WithUnit("s"), metric.WithDescription("busy time"))
	if err != nil {
		t.Fatal(err)
	}
	busy.Add(ctx, 0.25)
	busy.Add(ctx, 1e-7)
	size, err := m.Int64Histogram("cellb.test.bundle.size", metric.WithUnit("By"), metric.WithDescription("bundle sizes"),
		metric.WithExplicitBucketBoundaries(1<<10, 16<<20))
	if err != nil {
		t.Fatal(err)
	}
	size.Record(ctx, 100)
	size.Record(ctx, 20<<20)
}

// recordNamingCases records what core does not, to compare the naming
// rules with the exporter's: rates, ratios, a name already ending in its
// unit, odd label names, a second scope (whose instrument of the same name
// has the same description: which one the exporter keeps depends on the
// SDK's map order).
func recordNamingCases(t *testing.T, mp metric.MeterProvider) {
	t.Helper()
	ctx := context.Background()
	m := mp.Meter("example.com/other", metric.WithInstrumentationVersion("v1.2.3"))
	for name, unit := range map[string]string{"io.rate": "By/s", "cpu.utilization": "1", "x.wait.seconds": "s", "y.per.s": "{req}/s", "z.odd": "widgets"} {
		g, err := m.Float64Gauge(name, metric.WithUnit(unit))
		if err != nil {
			t.Fatal(err)
		}
		g.Record(ctx, 0.5, metric.WithAttributes(attribute.String("1st", "x"), attribute.String("a-b.c", "y"), attribute.Bool("flag", true), attribute.Int64("n", -3)))
	}
	c, err := m.Int64Counter("requests_total")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(ctx, 9)
	c2, err := m.Int64Counter("cellb.test.turns", metric.WithUnit("{turn}"), metric.WithDescription("turns run, a \"quoted\" \\ backslash\nand a newline"))
	if err != nil {
		t.Fatal(err)
	}
	c2.Add(ctx, 4)
}

// goldenResource is a fixed resource, so target_info does not name the
// test binary.
func goldenResource() *resource.Resource {
	return resource.NewSchemaless(attribute.String("service.name", "golden"), attribute.String("telemetry.sdk.language", "go"))
}

const goldenText = `# HELP cellb_test_age_seconds age
# TYPE cellb_test_age_seconds gauge
cellb_test_age_seconds{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version=""} 2.5
# HELP cellb_test_bundle_size_bytes bundle sizes
# TYPE cellb_test_bundle_size_bytes histogram
cellb_test_bundle_size_bytes_bucket{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",le="1024"} 1
cellb_test_bundle_size_bytes_bucket{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",le="1.6777216e+07"} 1
cellb_test_bundle_size_bytes_bucket{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",le="+Inf"} 2
cellb_test_bundle_size_bytes_sum{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version=""} 2.097162e+07
cellb_test_bundle_size_bytes_count{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version=""} 2
# HELP cellb_test_busy_seconds_total busy time
# TYPE cellb_test_busy_seconds_total counter
cellb_test_busy_seconds_total{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version=""} 0.2500001
# HELP cellb_test_open cells open
# TYPE cellb_test_open gauge
cellb_test_open{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version=""} 3
# HELP cellb_test_turns_total turns run, a "quoted" \\ backslash\nand a newline
# TYPE cellb_test_turns_total counter
cellb_test_turns_total{cell_key="k",class="a \"q\" b\\c\nd",otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version=""} 2
cellb_test_turns_total{class="Counter",otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="error"} 1
cellb_test_turns_total{class="Counter",otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="ok"} 3
# HELP cellb_test_wait_duration_seconds waits
# TYPE cellb_test_wait_duration_seconds histogram
cellb_test_wait_duration_seconds_bucket{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="error",le="0.001"} 0
cellb_test_wait_duration_seconds_bucket{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="error",le="0.01"} 0
cellb_test_wait_duration_seconds_bucket{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="error",le="0.1"} 1
cellb_test_wait_duration_seconds_bucket{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="error",le="1"} 1
cellb_test_wait_duration_seconds_bucket{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="error",le="+Inf"} 1
cellb_test_wait_duration_seconds_sum{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="error"} 0.05
cellb_test_wait_duration_seconds_count{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="error"} 1
cellb_test_wait_duration_seconds_bucket{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="ok",le="0.001"} 1
cellb_test_wait_duration_seconds_bucket{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="ok",le="0.01"} 3
cellb_test_wait_duration_seconds_bucket{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="ok",le="0.1"} 3
cellb_test_wait_duration_seconds_bucket{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="ok",le="1"} 4
cellb_test_wait_duration_seconds_bucket{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="ok",le="+Inf"} 5
cellb_test_wait_duration_seconds_sum{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="ok"} 7.5105
cellb_test_wait_duration_seconds_count{otel_scope_name="github.com/cellb/cellb/core",otel_scope_schema_url="",otel_scope_version="",outcome="ok"} 5
# HELP target_info Target metadata
# TYPE target_info gauge
target_info{service_name="golden",telemetry_sdk_language="go"} 1
`

// TestPromTextGolden: the fixed recordings are written exactly as
// goldenText (names with unit suffixes and _total, cumulative buckets,
// escaped label values and HELP, sorted by name then labels), with the
// format's content type.
func TestPromTextGolden(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(goldenResource()))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	recordGolden(t, mp)
	rec := httptest.NewRecorder()
	Handler{Reader: reader}.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if got := rec.Body.String(); got != goldenText {
		t.Errorf("exposition differs from the golden text:\n%s", lineDiff(goldenText, got))
	}
	parse(t, strings.NewReader(rec.Body.String())) // and it parses
}

// TestPromTextMatchesTheExporter: for the same recordings, on one provider
// with both readers, the text parses to the same families (HELP, TYPE) and
// samples (name, labels, value) as the OpenTelemetry Prometheus exporter's
// served by client_golang, which cellb used before.
func TestPromTextMatchesTheExporter(t *testing.T) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithReader(exp), sdkmetric.WithResource(goldenResource()))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	recordGolden(t, mp)
	recordNamingCases(t, mp)

	ours := flatten(scrape(t, Handler{Reader: reader}))
	theirs := flatten(scrape(t, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	if strings.Join(ours, "\n") != strings.Join(theirs, "\n") {
		t.Errorf("ours and the exporter's differ:\n%s", lineDiff(strings.Join(theirs, "\n"), strings.Join(ours, "\n")))
	}
	if len(ours) < 30 {
		t.Fatalf("only %d lines compared", len(ours))
	}
}

// TestPromTextCollectFails: a reader that cannot collect answers 500 with
// one line, not a partial exposition.
func TestPromTextCollectFails(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	recordGolden(t, mp)
	mp.Shutdown(context.Background())
	rec := httptest.NewRecorder()
	Handler{Reader: reader}.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if rec.Code != 500 || strings.Count(body, "\n") != 1 || !strings.HasPrefix(body, "collecting metrics: ") {
		t.Fatalf("status %d, body %q", rec.Code, body)
	}
}

// TestPromNames: the exporter's naming rules beyond what the golden set
// records.
func TestPromNames(t *testing.T) {
	for _, c := range []struct{ name, unit, kind, want string }{
		{"cellb.cell.turns", "{turn}", "counter", "cellb_cell_turns_total"},
		{"requests_total", "", "counter", "requests_total"},
		{"http.server.duration", "ms", "histogram", "http_server_duration_milliseconds"},
		{"io.rate", "By/s", "gauge", "io_rate_bytes_per_second"},
		{"cpu.utilization", "1", "gauge", "cpu_utilization_ratio"},
		{"x.wait.seconds", "s", "histogram", "x_wait_seconds"},
		{"9lives", "", "gauge", "_9lives"},
		{"a..b-c", "", "gauge", "a_b_c"},
	} {
		if got := promName(c.name, c.unit, c.kind); got != c.want {
			t.Errorf("promName(%q, %q, %q) = %q, want %q", c.name, c.unit, c.kind, got, c.want)
		}
	}
	for in, want := range map[string]string{"cell.key": "cell_key", "1st": "key_1st", "é": "_", "ok_": "ok_"} {
		if got := promLabelName(in); got != want {
			t.Errorf("promLabelName(%q) = %q, want %q", in, got, want)
		}
	}
}

// parse parses Prometheus text with the format library, so a malformed
// exposition fails the test.
func parse(t *testing.T, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	return fams
}

// scrape serves one GET /metrics from h and parses it.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	return parse(t, rec.Body)
}

// flatten is a parsed exposition as sorted lines: HELP and TYPE of every
// family and one line per sample, labels sorted, so two expositions
// compare whatever their order.
func flatten(e map[string]*dto.MetricFamily) []string {
	var out []string
	for name, f := range e {
		out = append(out, fmt.Sprintf("%s HELP %q", name, f.GetHelp()), fmt.Sprintf("%s TYPE %s", name, f.GetType()))
		for _, m := range f.GetMetric() {
			labels := labelString(m.GetLabel())
			switch {
			case m.Counter != nil:
				out = append(out, fmt.Sprintf("%s%s %v", name, labels, m.Counter.GetValue()))
			case m.Gauge != nil:
				out = append(out, fmt.Sprintf("%s%s %v", name, labels, m.Gauge.GetValue()))
			case m.Histogram != nil:
				h := m.Histogram
				for _, b := range h.GetBucket() {
					out = append(out, fmt.Sprintf("%s_bucket%s le=%v %d", name, labels, b.GetUpperBound(), b.GetCumulativeCount()))
				}
				out = append(out, fmt.Sprintf("%s_sum%s %v", name, labels, h.GetSampleSum()),
					fmt.Sprintf("%s_count%s %d", name, labels, h.GetSampleCount()))
			default:
				out = append(out, fmt.Sprintf("%s%s unknown %v", name, labels, m))
			}
		}
	}
	sort.Strings(out)
	return out
}

func labelString(lps []*dto.LabelPair) string {
	var s []string
	for _, lp := range lps {
		s = append(s, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
	}
	sort.Strings(s)
	return "{" + strings.Join(s, ",") + "}"
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	count := map[string]int{}
	for _, l := range strings.Split(want, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(got, "\n") {
		count[l]--
	}
	var out []string
	for l, n := range count {
		switch {
		case n > 0:
			out = append(out, "- "+l)
		case n < 0:
			out = append(out, "+ "+l)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "(the same lines, in another order)"
	}
	return strings.Join(out, "\n")
}
