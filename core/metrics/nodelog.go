package metrics

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The node log's metric names (core/nodelog; docs/metrics.md).
const (
	NameBundleSize      = "cellb.nodelog.bundle.size"
	NameBundleRows      = "cellb.nodelog.bundle.rows"
	NameFlushDuration   = "cellb.nodelog.flush.duration"
	NameBundlesDeleted  = "cellb.nodelog.bundles_deleted"
	NameUntieredAge     = "cellb.nodelog.untiered.age"
	NameTiers           = "cellb.nodelog.tiers"
	NameTieredRows      = "cellb.nodelog.tiered_rows"
	NameRecoveries      = "cellb.nodelog.recoveries"
	NameRecoveredRows   = "cellb.nodelog.recovered_rows"
	NameRecoverDuration = "cellb.nodelog.recovery.duration"
)

// NodeLog is a node log's instruments (core/nodelog). A nil *NodeLog
// records nothing.
type NodeLog struct {
	size, rows     metric.Int64Histogram
	flush          metric.Float64Histogram
	deleted        metric.Int64Counter
	tiers, tiered  metric.Int64Counter
	recoveries     metric.Int64Counter
	recovered      metric.Int64Counter
	recoverLatency metric.Float64Histogram
	age            metric.Float64ObservableGauge
}

// NewNodeLog creates a node log's instruments on mp; untieredAge reports
// how long ago the oldest bundle not yet covered by its cells' prefixes was
// credited (0 when none is). A nil mp gives a nil *NodeLog.
func NewNodeLog(mp metric.MeterProvider, untieredAge func() time.Duration) (*NodeLog, error) {
	if mp == nil {
		return nil, nil
	}
	m := meter(mp)
	n := &NodeLog{}
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	n.size, err = m.Int64Histogram(NameBundleSize, metric.WithUnit("By"),
		metric.WithDescription("Bytes of each bundle the node log stores."),
		metric.WithExplicitBucketBoundaries(1<<10, 4<<10, 16<<10, 64<<10, 256<<10, 1<<20, 4<<20, 16<<20))
	add(err)
	n.rows, err = m.Int64Histogram(NameBundleRows, metric.WithUnit("{row}"),
		metric.WithDescription("Rows (one cell's commit each) in each bundle the node log stores."),
		metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024))
	add(err)
	n.flush, err = m.Float64Histogram(NameFlushDuration, metric.WithUnit("s"),
		metric.WithDescription("Time from a flush's start to its credit (the bundle PUT and the node record read after it), by outcome."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	add(err)
	n.deleted, err = m.Int64Counter(NameBundlesDeleted, metric.WithUnit("{bundle}"),
		metric.WithDescription("Bundles deleted once every row in them was in its cell's own prefix."))
	add(err)
	n.tiers, err = m.Int64Counter(NameTiers, metric.WithUnit("{object}"),
		metric.WithDescription("Objects written into cells' own prefixes from bundled rows (tiering), by outcome."))
	add(err)
	n.tiered, err = m.Int64Counter(NameTieredRows, metric.WithUnit("{row}"),
		metric.WithDescription("Bundled rows written into cells' own prefixes (tiering)."))
	add(err)
	n.recoveries, err = m.Int64Counter(NameRecoveries, metric.WithUnit("{recovery}"),
		metric.WithDescription("Recoveries of a dead session's node log this node ran (fence, fold, seal), by outcome."))
	add(err)
	n.recovered, err = m.Int64Counter(NameRecoveredRows, metric.WithUnit("{row}"),
		metric.WithDescription("Rows of dead sessions' bundles written into cells' own prefixes by recoveries."))
	add(err)
	n.recoverLatency, err = m.Float64Histogram(NameRecoverDuration, metric.WithUnit("s"),
		metric.WithDescription("Time one fold of a dead session's bundles took."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	add(err)
	n.age, err = m.Float64ObservableGauge(NameUntieredAge, metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest row this node acknowledged that is not yet in its cell's own prefix (0 when none): the tiering lag."))
	add(err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if untieredAge != nil {
		if _, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			o.ObserveFloat64(n.age, untieredAge().Seconds())
			return nil
		}, n.age); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// Bundle records one bundle's size and rows before its PUT.
func (n *NodeLog) Bundle(bytes, rows int) {
	if n == nil {
		return
	}
	ctx := context.Background()
	n.size.Record(ctx, int64(bytes))
	n.rows.Record(ctx, int64(rows))
}

// Flush records one flush's time to its credit (or failure).
func (n *NodeLog) Flush(d time.Duration, rows int, err error) {
	if n == nil {
		return
	}
	n.flush.Record(context.Background(), d.Seconds(), attrs(attribute.String(KeyOutcome, Outcome(err))))
}

// BundleDeleted counts one bundle deleted once covered.
func (n *NodeLog) BundleDeleted() {
	if n == nil {
		return
	}
	n.deleted.Add(context.Background(), 1)
}

// Tier counts one object tiered into a cell's prefix holding rows rows.
func (n *NodeLog) Tier(rows int, err error) {
	if n == nil {
		return
	}
	ctx := context.Background()
	n.tiers.Add(ctx, 1, attrs(attribute.String(KeyOutcome, Outcome(err))))
	if err == nil {
		n.tiered.Add(ctx, int64(rows))
	}
}

// Recovery counts one recovery of a dead session's log and the rows it
// folded.
func (n *NodeLog) Recovery(d time.Duration, rows int, err error) {
	if n == nil {
		return
	}
	ctx := context.Background()
	n.recoveries.Add(ctx, 1, attrs(attribute.String(KeyOutcome, Outcome(err))))
	n.recoverLatency.Record(ctx, d.Seconds())
	if err == nil {
		n.recovered.Add(ctx, int64(rows))
	}
}
