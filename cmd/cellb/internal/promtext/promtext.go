// Package promtext writes the readings of an OpenTelemetry SDK reader in
// the Prometheus text exposition format (version 0.0.4), for cellb's
// /metrics. It replaces the OpenTelemetry Prometheus exporter and
// client_golang, whose dependencies (client_model, common/expfmt, procfs,
// protobuf) cost every cold build of cellb about 9 s of wall time; the
// series keep the exporter's names and labels, so scrapers, dashboards and
// alerts (docs/metrics.md) see no change. It is a package of its own, not
// part of cmd/cellb/app, because the command holds wiring only (its line
// budget).
package promtext

import (
	"bytes"
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// ContentType names the format version, as scrapers expect.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves one collection of Reader per scrape (a manual reader
// collects only when asked, so an idle node does no work).
type Handler struct {
	Reader sdkmetric.Reader
}

// ServeHTTP answers the exposition, or 500 with a one-line reason when the
// reader cannot collect (a scraper then records the target as down rather
// than reading a partial answer as the truth).
func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	if err := Write(r.Context(), &b, h.Reader); err != nil {
		msg := strings.ReplaceAll(err.Error(), "\n", " ")
		http.Error(w, "collecting metrics: "+msg, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ContentType)
	w.Write(b.Bytes())
}

// promFamily is one metric name's HELP, TYPE and series.
type promFamily struct {
	help, kind string
	series     []promSeries
}

// promSeries is one label set's lines (several for a histogram), keyed by
// its rendered labels so the order is the labels' order.
type promSeries struct {
	key   string
	lines []string
}

// Write collects reader once and writes every family to b sorted by
// name, each family's series sorted by labels: the same readings always
// give the same bytes.
func Write(ctx context.Context, b *bytes.Buffer, reader sdkmetric.Reader) error {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	// The SDK lists scopes in map order; sorted, the first scope to name a
	// family (whose HELP is kept) is the same on every scrape.
	sort.SliceStable(rm.ScopeMetrics, func(i, j int) bool {
		a, b := rm.ScopeMetrics[i].Scope, rm.ScopeMetrics[j].Scope
		return a.Name+"\x00"+a.Version+"\x00"+a.SchemaURL < b.Name+"\x00"+b.Version+"\x00"+b.SchemaURL
	})
	fams := map[string]*promFamily{}
	for _, sm := range rm.ScopeMetrics {
		scope := scopeLabels(sm)
		for _, m := range sm.Metrics {
			addMetric(fams, m, scope)
		}
	}
	if rm.Resource != nil && rm.Resource.Len() > 0 {
		// target_info carries the resource (service name, SDK), once, as
		// the exporter does, instead of repeating it on every series.
		labels := promLabels(*rm.Resource.Set(), nil)
		fams["target_info"] = &promFamily{help: "Target metadata", kind: "gauge",
			series: []promSeries{{key: labels, lines: []string{"target_info" + labels + " 1"}}}}
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := fams[n]
		sort.SliceStable(f.series, func(i, j int) bool { return f.series[i].key < f.series[j].key })
		b.WriteString("# HELP " + n + " " + escapeHelp(f.help) + "\n")
		b.WriteString("# TYPE " + n + " " + f.kind + "\n")
		for _, s := range f.series {
			for _, l := range s.lines {
				b.WriteString(l + "\n")
			}
		}
	}
	return nil
}

// addMetric adds one instrument's data points to its family. Exponential
// histograms and summaries have no form in the 0.0.4 text format and core
// records none; they are left out.
func addMetric(fams map[string]*promFamily, m metricdata.Metrics, scope [][2]string) {
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		addPoints(fams, m, scope, d.IsMonotonic, d.DataPoints)
	case metricdata.Sum[float64]:
		addPoints(fams, m, scope, d.IsMonotonic, d.DataPoints)
	case metricdata.Gauge[int64]:
		addPoints(fams, m, scope, false, d.DataPoints)
	case metricdata.Gauge[float64]:
		addPoints(fams, m, scope, false, d.DataPoints)
	case metricdata.Histogram[int64]:
		addHistogram(fams, m, scope, d.DataPoints)
	case metricdata.Histogram[float64]:
		addHistogram(fams, m, scope, d.DataPoints)
	}
}

// family is name's family, created with kind; nil when the name is already
// taken by another kind (two scopes disagreeing), which is then dropped
// rather than exposed as a family a scraper would reject.
func family(fams map[string]*promFamily, name, kind, help string) *promFamily {
	f, ok := fams[name]
	if !ok {
		f = &promFamily{help: help, kind: kind}
		fams[name] = f
	}
	if f.kind != kind {
		return nil
	}
	return f
}

// addPoints adds a sum or gauge: monotonic sums are counters (_total),
// everything else a gauge, as an up-down counter can go down.
func addPoints[N int64 | float64](fams map[string]*promFamily, m metricdata.Metrics, scope [][2]string, counter bool, pts []metricdata.DataPoint[N]) {
	kind := "gauge"
	if counter {
		kind = "counter"
	}
	name := promName(m.Name, m.Unit, kind)
	f := family(fams, name, kind, m.Description)
	if f == nil {
		return
	}
	for _, p := range pts {
		labels := promLabels(p.Attributes, scope)
		f.series = append(f.series, promSeries{key: labels,
			lines: []string{name + labels + " " + promFloat(float64(p.Value))}})
	}
}

// addHistogram adds explicit-bucket histograms: cumulative _bucket lines
// (the SDK counts per bucket; Prometheus wants "at most le") ending in
// +Inf, then _sum and _count.
func addHistogram[N int64 | float64](fams map[string]*promFamily, m metricdata.Metrics, scope [][2]string, pts []metricdata.HistogramDataPoint[N]) {
	name := promName(m.Name, m.Unit, "histogram")
	f := family(fams, name, "histogram", m.Description)
	if f == nil {
		return
	}
	for _, p := range pts {
		labels := promLabels(p.Attributes, scope)
		var lines []string
		var cum uint64
		for i, bound := range p.Bounds {
			if i < len(p.BucketCounts) {
				cum += p.BucketCounts[i]
			}
			lines = append(lines, name+"_bucket"+withLe(labels, promFloat(bound))+" "+strconv.FormatUint(cum, 10))
		}
		lines = append(lines,
			name+"_bucket"+withLe(labels, "+Inf")+" "+strconv.FormatUint(p.Count, 10),
			name+"_sum"+labels+" "+promFloat(float64(p.Sum)),
			name+"_count"+labels+" "+strconv.FormatUint(p.Count, 10))
		f.series = append(f.series, promSeries{key: labels, lines: lines})
	}
}

// withLe adds the le label last to rendered labels.
func withLe(labels, le string) string {
	pair := `le="` + le + `"`
	if labels == "" {
		return "{" + pair + "}"
	}
	return labels[:len(labels)-1] + "," + pair + "}"
}

// scopeLabels are the otel_scope_* labels the exporter puts on every series,
// so two libraries' instruments of one name stay apart.
func scopeLabels(sm metricdata.ScopeMetrics) [][2]string {
	s := [][2]string{
		{"otel_scope_name", sm.Scope.Name},
		{"otel_scope_schema_url", sm.Scope.SchemaURL},
		{"otel_scope_version", sm.Scope.Version},
	}
	for _, kv := range sm.Scope.Attributes.ToSlice() {
		s = append(s, [2]string{"otel_scope_" + promLabelName(string(kv.Key)), kv.Value.Emit()})
	}
	return s
}

// promLabels renders attrs and extra as {name="value",…} sorted by name
// ("" when there are none). Attribute keys that sanitise to the same name
// have their values joined with ";" (in key order) rather than one lost.
func promLabels(attrs attribute.Set, extra [][2]string) string {
	byName := map[string]string{}
	for _, kv := range attrs.ToSlice() { // sorted by key
		n := promLabelName(string(kv.Key))
		if v, ok := byName[n]; ok {
			byName[n] = v + ";" + kv.Value.Emit()
		} else {
			byName[n] = kv.Value.Emit()
		}
	}
	for _, kv := range extra {
		byName[kv[0]] = kv[1]
	}
	if len(byName) == 0 {
		return ""
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n + `="` + escapeLabelValue(byName[n]) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

// promUnits are the suffixes for the units OpenTelemetry's conventions use
// (UCUM); "1" (dimensionless) has none, and annotations such as {cell} are
// dropped, as they name what is counted rather than a unit.
var promUnits = map[string]string{
	"d": "days", "h": "hours", "min": "minutes", "s": "seconds",
	"ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds",
	"By": "bytes", "KiBy": "kibibytes", "MiBy": "mebibytes", "GiBy": "gibibytes", "TiBy": "tibibytes",
	"KBy": "kilobytes", "MBy": "megabytes", "GBy": "gigabytes", "TBy": "terabytes",
	"m": "meters", "V": "volts", "A": "amperes", "J": "joules", "W": "watts",
	"g": "grams", "Cel": "celsius", "Hz": "hertz", "%": "percent",
}

// promName is the exporter's name for an instrument: the name's words
// joined by underscores, then the unit (a/b as a_per_b, gauges of unit
// "1" as _ratio) and _total on counters, each unless already there.
func promName(name, unit, kind string) string {
	words := promWords(name)
	unitWords := promUnitWords(unit)
	if unit == "1" && kind == "gauge" {
		unitWords = []string{"ratio"}
	}
	if kind == "counter" {
		unitWords = append(unitWords, "total")
	}
	for _, w := range unitWords {
		if words[len(words)-1] != w {
			words = append(words, w)
		}
	}
	n := strings.Join(words, "_")
	if n[0] >= '0' && n[0] <= '9' {
		n = "_" + n
	}
	return n
}

// promWords splits s at every character a Prometheus name cannot hold (and
// at underscores), dropping empty words: "a.b__c" is a, b, c.
func promWords(s string) []string {
	words := strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == ':')
	})
	if len(words) == 0 {
		return []string{"_"}
	}
	return words
}

// promUnitWords is unit as name words: known units by name, others as
// their own words, a/b as a per b (with b singular: bytes_per_second).
func promUnitWords(unit string) []string {
	var words []string
	main, per, hasPer := strings.Cut(stripAnnotations(unit), "/")
	if w := unitWord(main, promUnits); w != "" {
		words = append(words, promWords(w)...)
	}
	if hasPer {
		if w := unitWord(per, promPerUnits); w != "" {
			words = append(words, "per")
			words = append(words, promWords(w)...)
		}
	}
	return words
}

// promPerUnits are the denominators of rates, singular.
var promPerUnits = map[string]string{
	"s": "second", "m": "minute", "h": "hour", "d": "day", "w": "week", "mo": "month", "y": "year",
}

// unitWord is u's name in names, u itself when unknown, "" for none.
func unitWord(u string, names map[string]string) string {
	u = strings.TrimSpace(u)
	if w, ok := names[u]; ok {
		return w
	}
	if u == "1" || strings.Trim(u, "_.") == "" {
		return ""
	}
	return u
}

// stripAnnotations removes {…} annotations from a UCUM unit.
func stripAnnotations(unit string) string {
	var b strings.Builder
	depth := 0
	for _, r := range unit {
		switch {
		case r == '{':
			depth++
		case r == '}' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// promLabelName replaces what a label name cannot hold with underscores;
// a name starting with a digit gets "key_" in front, as the exporter does.
func promLabelName(s string) string {
	n := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, s)
	if n == "" {
		return "_"
	}
	if n[0] >= '0' && n[0] <= '9' {
		n = "key_" + n
	}
	return n
}

var (
	labelValueEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper       = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// escapeLabelValue escapes what would end a quoted label value or a line.
func escapeLabelValue(s string) string { return labelValueEscaper.Replace(s) }

// escapeHelp escapes what would end a HELP line (quotes need none there).
func escapeHelp(s string) string { return helpEscaper.Replace(s) }

// promFloat writes a value the way the format reads it: shortest round
// trip, +Inf, -Inf, NaN.
func promFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
