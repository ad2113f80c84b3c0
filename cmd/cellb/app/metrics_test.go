package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/health"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/metrics"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
	"github.com/cellb/cellb/examples/counter"
)

// exposition is a parsed /metrics answer.
type exposition map[string]*dto.MetricFamily

// parseExposition parses Prometheus text with the format library, so a
// malformed exposition fails the test.
func parseExposition(t *testing.T, r io.Reader) exposition {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	return fams
}

// scrapeURL GETs url (a /metrics endpoint) and parses it.
func scrapeURL(t *testing.T, url string) exposition {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return parseExposition(t, resp.Body)
}

// scrapeHandler serves one GET /metrics from h and parses it.
func scrapeHandler(t *testing.T, h http.Handler) exposition {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	return parseExposition(t, rec.Body)
}

// family is the named family, failing the test when it is missing (the
// names present are listed, to show what the exporter called things).
func (e exposition) family(t *testing.T, name string) *dto.MetricFamily {
	t.Helper()
	f, ok := e[name]
	if !ok {
		var names []string
		for n := range e {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Fatalf("no metric %s in the exposition; it has %s", name, strings.Join(names, ", "))
	}
	return f
}

// series is the one series of family name whose labels include want.
func (e exposition) series(t *testing.T, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f := e.family(t, name)
	for _, m := range f.GetMetric() {
		if hasLabels(m, want) {
			return m
		}
	}
	t.Fatalf("no series %s%v; the family has %v", name, want, f.GetMetric())
	return nil
}

// value is a counter's or gauge's value, 0 when the series is absent.
func (e exposition) value(name string, want map[string]string) float64 {
	f, ok := e[name]
	if !ok {
		return 0
	}
	for _, m := range f.GetMetric() {
		if hasLabels(m, want) {
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			}
		}
	}
	return 0
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok && v == lp.GetValue() {
			n++
		}
	}
	return n == len(want)
}

// TestMetricsExposition: a node with the Prometheus wiring of serve
// --admin-listen serves 24 concurrent clients; the scraped exposition
// parses and holds the runtime's and the bucket's series with the counts
// the calls imply (one turn per call, a commit per increment, one
// activation and one open cell per counter).
func TestMetricsExposition(t *testing.T) {
	pm, err := newPrometheusMetrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pm.provider.Shutdown(context.Background()) })
	_, hs := startServer(t, serveConfig{Data: t.TempDir(), meters: pm.provider})

	const clients, each, counters = 24, 5, 4
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				name := fmt.Sprintf("m%d", (c+i)%counters)
				resp, err := http.Post(hs.URL+"/counter/"+name, "", nil)
				if err != nil {
					errs <- err
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("POST /counter/%s: %s", name, resp.Status)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	calls := float64(clients * each)

	e := scrapeHandler(t, pm.handler)
	class := map[string]string{"class": counter.Class}
	if got := e.value("cellb_cell_turns_total", map[string]string{"class": counter.Class, "outcome": "ok"}); got != calls {
		t.Errorf("turns ok = %v, want %v (one per call)", got, calls)
	}
	if got := e.value("cellb_cell_turns_total", map[string]string{"class": counter.Class, "outcome": "error"}); got != 0 {
		t.Errorf("turns error = %v, want 0", got)
	}
	// Each increment commits; an activation does not (lazy activation:
	// celld's tables are written with the cell's first write).
	if got := e.value("cellb_cell_commits_total", class); got != calls {
		t.Errorf("commits = %v, want %v (one per increment)", got, calls)
	}
	if got := e.value("cellb_cell_open", nil); got != counters {
		t.Errorf("cells open = %v, want %d", got, counters)
	}
	act := e.series(t, "cellb_cell_activation_duration_seconds", map[string]string{"class": counter.Class, "outcome": "ok"})
	if got := act.GetHistogram().GetSampleCount(); got != counters {
		t.Errorf("activations = %d, want %d", got, counters)
	}
	// The LTX log makes every commit durable in the bucket: replies wait.
	dw := e.series(t, "cellb_cell_durable_wait_duration_seconds", map[string]string{"class": counter.Class, "outcome": "ok"})
	if n := dw.GetHistogram().GetSampleCount(); n == 0 || float64(n) > calls+counters {
		t.Errorf("durable waits = %d, want between 1 and %v", n, calls+counters)
	}
	if dw.GetHistogram().GetSampleSum() < 0 {
		t.Errorf("durable wait sum %v < 0", dw.GetHistogram().GetSampleSum())
	}
	if got := e.value("cellb_bucket_requests_total", map[string]string{"operation": "put", "outcome": "ok"}); got < 1 {
		t.Errorf("bucket puts ok = %v, want at least one (the log's uploads)", got)
	}
	if got := e.value("cellb_cell_evictions_total", nil); got != 0 {
		t.Errorf("evictions = %v, want 0", got)
	}
	e.family(t, "cellb_bucket_request_duration_seconds")
}

// TestBucketRequestsByOutcome: the bucket wrapper counts every request by
// operation and outcome; an injected failure is counted as error, the
// protocol's expected refusals under their own names.
func TestBucketRequestsByOutcome(t *testing.T) {
	pm, err := newPrometheusMetrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pm.provider.Shutdown(context.Background()) })
	fs := faultstore.New(memstore.New(), faultstore.Config{})
	b, err := metrics.InstrumentStore(pm.provider, fs)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := b.Put(ctx, "k", []byte("v"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	fs.FailNext(faultstore.OpGet, "k")
	if _, err := b.Get(ctx, "k"); !errors.Is(err, faultstore.ErrInjected) {
		t.Fatalf("Get: %v, want the injected failure", err)
	}
	fs.FailNext(faultstore.OpPut, "k")
	if _, err := b.Put(ctx, "k", []byte("v2"), store.PutOptions{}); !errors.Is(err, faultstore.ErrInjected) {
		t.Fatalf("Put: %v, want the injected failure", err)
	}
	if _, err := b.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "missing"); !store.IsNotFound(err) {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "k", []byte("v3"), store.PutOptions{Condition: store.IfAbsent}); !store.IsPreconditionFailed(err) {
		t.Fatal(err)
	}
	r, err := store.NewReader(ctx, b, "k")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := store.PutFrom(ctx, b, "s", strings.NewReader("body"), 4, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.List(ctx, store.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}

	e := scrapeHandler(t, pm.handler)
	want := []struct {
		op, outcome string
		n           float64
	}{
		{"get", "ok", 2}, // Get and the streamed read
		{"get", "error", 1},
		{"get", "not_found", 1},
		{"put", "ok", 2}, // Put and the streamed write
		{"put", "error", 1},
		{"put", "precondition_failed", 1},
		{"list", "ok", 1},
		{"delete", "ok", 1},
	}
	for _, w := range want {
		if got := e.value("cellb_bucket_requests_total", map[string]string{"operation": w.op, "outcome": w.outcome}); got != w.n {
			t.Errorf("bucket requests %s %s = %v, want %v", w.op, w.outcome, got, w.n)
		}
	}
	d := e.series(t, "cellb_bucket_request_duration_seconds", map[string]string{"operation": "get"})
	if got := d.GetHistogram().GetSampleCount(); got != 4 {
		t.Errorf("get durations = %d, want 4", got)
	}
}

// TestFleetMetrics: a fleet node counts its lease renewals by outcome,
// its wake polls, and, once its lease is replaced under it and the next
// renewal (driven by the fake clock) is refused, its self-fence; /readyz, served with the
// same wiring as --admin-listen, turns 503 then.
func TestFleetMetrics(t *testing.T) {
	pm, err := newPrometheusMetrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pm.provider.Shutdown(context.Background()) })
	fs := memstore.New()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	drv, err := pickDriver("wasm", "OFF")
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(context.Background(), host.Config{
		Driver: drv, DataDir: t.TempDir(), Bucket: fs, Ownership: host.Fleet,
		Fleet: host.FleetConfig{Node: "node_m"}, Clock: clk, Logger: quietLogger(), MeterProvider: pm.provider,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	admin := health.New(pm.handler)
	admin.SetReady(h)
	adm := httptest.NewServer(admin)
	t.Cleanup(adm.Close)

	// The clock moves in small steps until a renewal has applied and the
	// wake service has polled (its loop arms its timers when its goroutine
	// starts, so a single early step could pass before them).
	eventually(t, "a renewal and a wake poll are counted", func() bool {
		clk.Advance(100 * time.Millisecond)
		e := scrapeURL(t, adm.URL+"/metrics")
		return e.value("cellb_fleet_lease_renewals_total", map[string]string{"outcome": "ok"}) >= 1 &&
			e.value("cellb_wake_polls_total", map[string]string{"role": "owner", "outcome": "ok"}) >= 1
	})
	if status := getStatus(t, adm.URL+"/readyz"); status != 200 {
		t.Fatalf("/readyz: %d before the fence, want 200", status)
	}
	if got := scrapeURL(t, adm.URL+"/metrics").value("cellb_fleet_self_fences_total", nil); got != 0 {
		t.Fatalf("self-fences = %v before any fence", got)
	}

	// Another writer replaces the node lease: the next renewal's
	// conditional write is refused and the node fences.
	if _, err := fs.Put(context.Background(), layout.NodeKey("node_m"), []byte(`{"node":"node_m","expires_ms":1}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// Small steps again: the shell re-arms its timer only once its last
	// renewal is done.
	for fenced := false; !fenced; {
		clk.Advance(100 * time.Millisecond)
		select {
		case <-h.Fenced():
			fenced = true
		case <-time.After(10 * time.Millisecond):
		}
	}
	if status := getStatus(t, adm.URL+"/readyz"); status != 503 {
		t.Fatalf("/readyz: %d after the self-fence, want 503", status)
	}
	e := scrapeURL(t, adm.URL+"/metrics")
	if got := e.value("cellb_fleet_self_fences_total", map[string]string{"reason": "replaced"}); got != 1 {
		t.Errorf("self-fences (replaced) = %v, want 1", got)
	}
	if got := e.value("cellb_fleet_lease_renewals_total", map[string]string{"outcome": "replaced"}); got != 1 {
		t.Errorf("refused renewals = %v, want 1", got)
	}
	if got := e.value("cellb_bucket_requests_total", map[string]string{"operation": "put", "outcome": "precondition_failed"}); got < 1 {
		t.Errorf("refused bucket puts = %v, want at least 1 (the renewal)", got)
	}
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// eventually waits for cond, which background work (the renewal shell,
// the wake loop) makes true; it fails after a generous bound rather than
// hang.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEvictionMetrics: cells evicted for the open-cell cap and for
// idleness are counted under their reasons, and the open-cells gauge
// follows.
func TestEvictionMetrics(t *testing.T) {
	for _, c := range []struct {
		reason string
		cfg    serveConfig
		calls  int
		evict  float64
		open   float64
	}{
		// Three cells one after the other under a cap of one: two go.
		{"max_open", serveConfig{MaxCells: 1}, 3, 2, 1},
		// A cell idle for a millisecond goes.
		{"idle", serveConfig{Idle: time.Millisecond}, 1, 1, 0},
	} {
		t.Run(c.reason, func(t *testing.T) {
			pm, err := newPrometheusMetrics()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pm.provider.Shutdown(context.Background()) })
			c.cfg.Data, c.cfg.meters = t.TempDir(), pm.provider
			_, hs := startServer(t, c.cfg)
			for i := range c.calls {
				if a := call(t, "POST", fmt.Sprintf("%s/counter/e%d", hs.URL, i)); a.status != 200 {
					t.Fatalf("POST: %+v", a)
				}
			}
			eventually(t, "the evictions are counted", func() bool {
				e := scrapeHandler(t, pm.handler)
				return e.value("cellb_cell_evictions_total", map[string]string{"class": counter.Class, "reason": c.reason}) == c.evict &&
					e.value("cellb_cell_open", nil) == c.open
			})
		})
	}
}

// ownedByN2 is a lease under which node n2 owns every cell.
type ownedByN2 struct{}

func (ownedByN2) TryAcquire(ctx context.Context, key string) (lease.Grant, error) {
	class, id, _ := strings.Cut(key, ":")
	return nil, &lease.CellOwnedElsewhereError{Class: class, ID: id, Owner: "n2", Addr: "10.0.0.6:9201"}
}

// TestTurnsOwnedElsewhere: calls for cells another node owns ran nothing
// here; they are counted as owned_elsewhere (turns and activations), not
// as errors.
func TestTurnsOwnedElsewhere(t *testing.T) {
	pm, err := newPrometheusMetrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pm.provider.Shutdown(context.Background()) })
	drv, err := pickDriver("wasm", "NORMAL")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := cell.New(cell.Options{Driver: drv, DataDir: t.TempDir(), Lease: ownedByN2{}, Logger: quietLogger(), MeterProvider: pm.provider})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	app, err := counter.Register(rt, counter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	app.Routes(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	const calls = 21
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(fmt.Sprintf("%s/counter/o%d", hs.URL, i), "", nil)
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	e := scrapeHandler(t, pm.handler)
	elsewhere := map[string]string{"class": counter.Class, "outcome": "owned_elsewhere"}
	if got := e.value("cellb_cell_turns_total", elsewhere); got != calls {
		t.Errorf("turns owned elsewhere = %v, want %d", got, calls)
	}
	if got := e.value("cellb_cell_turns_total", map[string]string{"outcome": "error"}); got != 0 {
		t.Errorf("turns error = %v, want 0", got)
	}
	if got := e.series(t, "cellb_cell_activation_duration_seconds", elsewhere).GetHistogram().GetSampleCount(); got != calls {
		t.Errorf("activations owned elsewhere = %d, want %d", got, calls)
	}
}

// TestNodeLogMetrics: a fleet node on the LTX mode writes through its node
// log: 24 concurrent increments of 24 counters are stored in bundles that
// carry several rows each, every flush is credited, and the bundle
// instruments show it; none is a per-cell level-0 upload of a commit.
func TestNodeLogMetrics(t *testing.T) {
	pm, err := newPrometheusMetrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pm.provider.Shutdown(context.Background()) })
	drv, err := pickDriver("wasm", "OFF")
	if err != nil {
		t.Fatal(err)
	}
	var app *counter.App
	// Every PUT takes 5 ms, as a bucket's round trip does: on an instant
	// in-memory bucket a loaded machine may run each flush before the next
	// commit arrives, and nothing would be left to group.
	bucket := faultstore.New(memstore.New(), faultstore.Config{PerOp: map[faultstore.Op]faultstore.Faults{faultstore.OpPut: {Latency: 5 * time.Millisecond}}})
	h, err := host.New(context.Background(), host.Config{
		Driver: drv, DataDir: t.TempDir(), Bucket: bucket, Mode: ltxlog.Mode(), Ownership: host.Fleet,
		Fleet: host.FleetConfig{Node: "node_m"}, Logger: quietLogger(), MeterProvider: pm.provider,
		Classes: func(su *host.Setup) (err error) {
			app, err = counter.Register(su.Runtime, counter.Options{Node: su.Node})
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	if h.NodeLog() == nil {
		t.Fatal("a fleet node on the LTX mode has no node log")
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stub := app.NS.Get(app.NS.IDFromName(fmt.Sprintf("c%d", i)))
			for j := 0; j < 5; j++ {
				if _, err := cell.Call(ctx, stub, func(ctx context.Context, c *counter.Counter) (int64, error) { return c.Add(ctx, 1) }); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	e := scrapeHandler(t, pm.handler)
	rows := e.series(t, "cellb_nodelog_bundle_rows", nil).GetHistogram()
	flushes := e.series(t, "cellb_nodelog_flush_duration_seconds", map[string]string{"outcome": "ok"}).GetHistogram()
	if rows.GetSampleCount() == 0 || rows.GetSampleSum() < 24*4 {
		t.Fatalf("bundles %d with %v rows, want the 24×4 commits after each cell's snapshot", rows.GetSampleCount(), rows.GetSampleSum())
	}
	if rows.GetSampleSum()/float64(rows.GetSampleCount()) < 2 {
		t.Errorf("%v rows per bundle: the flushes do not group", rows.GetSampleSum()/float64(rows.GetSampleCount()))
	}
	if flushes.GetSampleCount() != rows.GetSampleCount() {
		t.Errorf("%d flushes timed for %d bundles", flushes.GetSampleCount(), rows.GetSampleCount())
	}
	if _, ok := e["cellb_nodelog_untiered_age_seconds"]; !ok {
		t.Error("no tiering lag gauge")
	}
}
