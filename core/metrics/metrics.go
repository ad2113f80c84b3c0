// Package metrics defines every instrument CellB records, in one place, on
// an OpenTelemetry metric.MeterProvider handed in by the embedder. Core
// depends only on the OpenTelemetry metrics API (go.opentelemetry.io/otel/
// metric): no SDK, no exporter. The program that runs a node picks those
// (cmd/cellb serve wires the SDK with a Prometheus exporter); a nil
// provider records nothing and costs one nil check per event.
//
// Each area gets its own small set — Cell (core/cell), Fleet (core/fleet),
// Wake (core/wake) and InstrumentStore (the bucket, wrapped once by
// core/host) — built from the provider. A nil set is valid and records
// nothing, so the packages that hold one need no branch of their own.
//
// Why the OpenTelemetry API (docs/decisions.md): it is the vendor-neutral
// standard embedders already carry a provider for, it holds no SDK,
// exporter or network code, and unused it costs nothing. It is core's only
// dependency for metrics (go.opentelemetry.io/otel/metric, with
// go.opentelemetry.io/otel for attribute sets).
//
// docs/metrics.md lists every metric, its unit and its attributes.
package metrics

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope every CellB instrument is created
// under (the Meter's name).
const ScopeName = "github.com/cellb/cellb/core"

// Metric names (OpenTelemetry style; a Prometheus exporter turns dots into
// underscores and appends the unit and _total, e.g. cellb_cell_turns_total).
const (
	NameTurns          = "cellb.cell.turns"
	NameCommits        = "cellb.cell.commits"
	NameDurableWait    = "cellb.cell.durable_wait.duration"
	NameActivation     = "cellb.cell.activation.duration"
	NameCellsOpen      = "cellb.cell.open"
	NameWebSocketsOpen = "cellb.websocket.open"
	NameEvictions      = "cellb.cell.evictions"
	NameBucketRequests = "cellb.bucket.requests"
	NameBucketDuration = "cellb.bucket.request.duration"
	NameLeaseRenewals  = "cellb.fleet.lease_renewals"
	NameSelfFences     = "cellb.fleet.self_fences"
	NameWakePolls      = "cellb.wake.polls"
)

// Attribute keys.
const (
	KeyClass     = "class"
	KeyOutcome   = "outcome"
	KeyReason    = "reason"
	KeyOperation = "operation"
	KeyRole      = "role"
)

// Outcomes shared by several instruments.
const (
	OutcomeOK       = "ok"
	OutcomeError    = "error"
	OutcomeCanceled = "canceled"
	// OutcomeElsewhere: the cell is owned by another node or process, so
	// nothing ran here (the host forwards such calls to the owner).
	OutcomeElsewhere = "owned_elsewhere"
)

// latencyBuckets are the histogram boundaries (seconds) of every duration
// instrument: 1 ms to 30 s, roughly ×2.5 apart, which covers a local
// commit, a bucket round trip and a slow activation alike.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

func meter(mp metric.MeterProvider) metric.Meter { return mp.Meter(ScopeName) }

// Outcome names err for the outcome attribute: ok, canceled (the caller's
// context ended) or error.
func Outcome(err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return OutcomeCanceled
	}
	return OutcomeError
}

func attrs(kv ...attribute.KeyValue) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(kv...))
}

// Cell is the runtime's instruments (core/cell). A nil *Cell records
// nothing.
type Cell struct {
	turns       metric.Int64Counter
	commits     metric.Int64Counter
	durableWait metric.Float64Histogram
	activation  metric.Float64Histogram
	evictions   metric.Int64Counter
	open        metric.Int64ObservableGauge
	sockets     metric.Int64ObservableGauge
	mp          metric.MeterProvider
}

// NewCell creates the runtime's instruments on mp; a nil mp gives a nil
// *Cell.
func NewCell(mp metric.MeterProvider) (*Cell, error) {
	if mp == nil {
		return nil, nil
	}
	m := meter(mp)
	c := &Cell{mp: mp}
	var err error
	var errs []error
	c.turns, err = m.Int64Counter(NameTurns, metric.WithUnit("{turn}"),
		metric.WithDescription("Events run on cells (calls, fetches, alarms), by class and outcome."))
	errs = append(errs, err)
	c.commits, err = m.Int64Counter(NameCommits, metric.WithUnit("{commit}"),
		metric.WithDescription("Local SQLite commits of cells' turns, by class."))
	errs = append(errs, err)
	c.durableWait, err = m.Float64Histogram(NameDurableWait, metric.WithUnit("s"),
		metric.WithDescription("How long a reply waited for its commits to become durable (the output gate), by class and outcome."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	errs = append(errs, err)
	c.activation, err = m.Float64Histogram(NameActivation, metric.WithUnit("s"),
		metric.WithDescription("How long a cell took to activate (ownership, database, log restore, constructor), by class and outcome."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	errs = append(errs, err)
	c.evictions, err = m.Int64Counter(NameEvictions, metric.WithUnit("{cell}"),
		metric.WithDescription("Cells evicted from memory, by class and reason (idle, max_open)."))
	errs = append(errs, err)
	c.open, err = m.Int64ObservableGauge(NameCellsOpen, metric.WithUnit("{cell}"),
		metric.WithDescription("Cells in memory, their database open."))
	errs = append(errs, err)
	c.sockets, err = m.Int64ObservableGauge(NameWebSocketsOpen, metric.WithUnit("{socket}"),
		metric.WithDescription("WebSockets the node holds open for its cells, awake or hibernated."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// Eviction reasons.
const (
	EvictIdle    = "idle"
	EvictMaxOpen = "max_open"
)

// Turn counts one event of a cell of class with its outcome (Outcome's
// names, or OutcomeElsewhere).
func (c *Cell) Turn(ctx context.Context, class, outcome string) {
	if c == nil {
		return
	}
	c.turns.Add(ctx, 1, attrs(attribute.String(KeyClass, class), attribute.String(KeyOutcome, outcome)))
}

// Commit counts one local commit of a cell of class.
func (c *Cell) Commit(ctx context.Context, class string) {
	if c == nil {
		return
	}
	c.commits.Add(ctx, 1, attrs(attribute.String(KeyClass, class)))
}

// DurableWait records how long a reply waited for durability.
func (c *Cell) DurableWait(ctx context.Context, class string, d time.Duration, err error) {
	if c == nil {
		return
	}
	c.durableWait.Record(ctx, d.Seconds(), attrs(attribute.String(KeyClass, class), attribute.String(KeyOutcome, Outcome(err))))
}

// Activation records one activation's duration and outcome (Outcome's
// names, or OutcomeElsewhere).
func (c *Cell) Activation(ctx context.Context, class string, d time.Duration, outcome string) {
	if c == nil {
		return
	}
	c.activation.Record(ctx, d.Seconds(), attrs(attribute.String(KeyClass, class), attribute.String(KeyOutcome, outcome)))
}

// Evicted counts one eviction (reason EvictIdle or EvictMaxOpen).
func (c *Cell) Evicted(ctx context.Context, class, reason string) {
	if c == nil {
		return
	}
	c.evictions.Add(ctx, 1, attrs(attribute.String(KeyClass, class), attribute.String(KeyReason, reason)))
}

// ObserveOpen reports open() as the open-cells gauge at each collection,
// until the returned function is called. On a nil *Cell it does nothing.
func (c *Cell) ObserveOpen(open func() int) (stop func() error, err error) {
	if c == nil {
		return func() error { return nil }, nil
	}
	return c.observe(c.open, open)
}

// ObserveWebSockets reports sockets() as the open-WebSockets gauge, as
// ObserveOpen does for cells.
func (c *Cell) ObserveWebSockets(sockets func() int) (stop func() error, err error) {
	if c == nil {
		return func() error { return nil }, nil
	}
	return c.observe(c.sockets, sockets)
}

func (c *Cell) observe(g metric.Int64ObservableGauge, value func() int) (stop func() error, err error) {
	reg, err := meter(c.mp).RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(g, int64(value()))
		return nil
	}, g)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}

// Fleet is a fleet node's instruments (core/fleet). A nil *Fleet records
// nothing.
type Fleet struct {
	renewals metric.Int64Counter
	fences   metric.Int64Counter
}

// Outcomes of a node-lease renewal.
const (
	RenewalOK        = OutcomeOK
	RenewalAmbiguous = "ambiguous"
	RenewalReplaced  = "replaced"
	RenewalError     = OutcomeError
)

// NewFleet creates a fleet node's instruments on mp; a nil mp gives a nil
// *Fleet.
func NewFleet(mp metric.MeterProvider) (*Fleet, error) {
	if mp == nil {
		return nil, nil
	}
	m := meter(mp)
	f := &Fleet{}
	var err1, err2 error
	f.renewals, err1 = m.Int64Counter(NameLeaseRenewals, metric.WithUnit("{renewal}"),
		metric.WithDescription("Writes of this node's lease (the first one at join included), by outcome (ok, ambiguous, replaced, error)."))
	f.fences, err2 = m.Int64Counter(NameSelfFences, metric.WithUnit("{fence}"),
		metric.WithDescription("Self-fences of this node, by reason (late, renewed_late, replaced)."))
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return f, nil
}

// Renewal counts one write of the node lease with its outcome (RenewalOK,
// RenewalAmbiguous, RenewalReplaced, RenewalError).
func (f *Fleet) Renewal(outcome string) {
	if f == nil {
		return
	}
	f.renewals.Add(context.Background(), 1, attrs(attribute.String(KeyOutcome, outcome)))
}

// SelfFence counts the node's self-fence; reason is a short code.
func (f *Fleet) SelfFence(reason string) {
	if f == nil {
		return
	}
	f.fences.Add(context.Background(), 1, attrs(attribute.String(KeyReason, reason)))
}

// Wake is the wake service's instruments (core/wake). A nil *Wake records
// nothing.
type Wake struct {
	polls metric.Int64Counter
}

// Roles of a wake poll.
const (
	RoleOwner = "owner" // the node's scan for its own cells
	RoleWaker = "waker" // the elected waker's scan for unowned cells
)

// NewWake creates the wake service's instruments on mp; a nil mp gives a
// nil *Wake.
func NewWake(mp metric.MeterProvider) (*Wake, error) {
	if mp == nil {
		return nil, nil
	}
	w := &Wake{}
	var err error
	w.polls, err = meter(mp).Int64Counter(NameWakePolls, metric.WithUnit("{poll}"),
		metric.WithDescription("Scans of the wake index for due alarms, by role (owner, waker) and outcome."))
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Poll counts one scan of the wake index.
func (w *Wake) Poll(ctx context.Context, role string, err error) {
	if w == nil {
		return
	}
	w.polls.Add(context.WithoutCancel(ctx), 1, attrs(attribute.String(KeyRole, role), attribute.String(KeyOutcome, Outcome(err))))
}
