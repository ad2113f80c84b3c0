package cell

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/metrics"
)

// waitCounter is a MeterProvider whose durable-wait histogram counts its
// samples; every other instrument records nothing.
type waitCounter struct {
	noop.MeterProvider
	samples *atomic.Int64
}

func (p waitCounter) Meter(string, ...metric.MeterOption) metric.Meter {
	return waitMeter{samples: p.samples}
}

type waitMeter struct {
	noop.Meter
	samples *atomic.Int64
}

func (m waitMeter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	if name != metrics.NameDurableWait {
		return m.Meter.Float64Histogram(name, opts...)
	}
	return waitHistogram{samples: m.samples}, nil
}

type waitHistogram struct {
	noop.Float64Histogram
	samples *atomic.Int64
}

func (h waitHistogram) Record(context.Context, float64, ...metric.RecordOption) { h.samples.Add(1) }

// A reply that waits behind the output gate is timed in the durable-wait
// histogram; one with nothing to wait for is not recorded
// (docs/metrics.md: with local durability there are no samples).
func TestDurableWaitRecordedOnlyWhenWaiting(t *testing.T) {
	var samples atomic.Int64
	m, err := metrics.NewCell(waitCounter{samples: &samples})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer close(done)
	inst := &instance{rt: &Runtime{clk: clock.NewFake(time.Unix(0, 0)), metrics: m}, cls: &class{name: "Counter"}}
	inst.commits.grant, inst.commits.done = &ackGrant{}, done
	inst.commits.fail = func(reason string, _ error) error {
		t.Fatalf("the object was reset: %s", reason)
		return nil
	}
	ctx := context.Background()

	if err := inst.awaitDurable(ctx, inst.commits.snapshot()); err != nil {
		t.Fatal(err)
	}
	if n := samples.Load(); n != 0 {
		t.Fatalf("%d durable waits recorded for a reply with nothing to wait for, want 0", n)
	}

	f := durability.NewFuture()
	inst.commits.track(f)
	ps := inst.commits.snapshot()
	f.Resolve(nil)
	if err := inst.awaitDurable(ctx, ps); err != nil {
		t.Fatal(err)
	}
	if n := samples.Load(); n != 1 {
		t.Fatalf("%d durable waits recorded for a reply that waited for a commit, want 1", n)
	}
}
