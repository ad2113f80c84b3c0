package metrics

import (
	"context"
	"errors"
	"io"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cellb/cellb/core/store"
)

// Bucket operations (the operation attribute). A streamed read counts as
// get and a streamed write as put: they are the same requests to the
// bucket's bill.
const (
	OpGet    = "get"
	OpPut    = "put"
	OpDelete = "delete"
	OpList   = "list"
	// OpCopy is a copy inside the bucket (store.Copier); on a store
	// without one it streams, and still counts as one copy.
	OpCopy = "copy"
)

// Outcomes of a bucket request besides ok, error and canceled.
const (
	OutcomeNotFound           = "not_found"
	OutcomePreconditionFailed = "precondition_failed"
	OutcomeAmbiguous          = "ambiguous"
)

// StoreOutcome names a Store call's error for the outcome attribute: ok,
// not_found, precondition_failed (both expected answers of the protocol,
// not failures), ambiguous, canceled or error.
func StoreOutcome(err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case store.IsNotFound(err):
		return OutcomeNotFound
	case store.IsPreconditionFailed(err):
		return OutcomePreconditionFailed
	case store.IsAmbiguous(err):
		return OutcomeAmbiguous
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return OutcomeCanceled
	}
	return OutcomeError
}

// InstrumentStore wraps s so that every request it serves is counted
// (cellb.bucket.requests, by operation and outcome) and timed
// (cellb.bucket.request.duration, by operation). It is the one place the
// bucket is measured, whatever the adapter: core/host wraps the bucket it
// is given once and hands the wrapper to the fleet, the wake service and
// the durability mode. The wrapper streams when s streams (store.Streamer)
// and closes s when closed (store.Closer). A nil mp returns s itself.
func InstrumentStore(mp metric.MeterProvider, s store.Store) (store.Store, error) {
	if mp == nil || s == nil {
		return s, nil
	}
	m := meter(mp)
	reqs, err1 := m.Int64Counter(NameBucketRequests, metric.WithUnit("{request}"),
		metric.WithDescription("Requests to the bucket, by operation (get, put, delete, list, copy) and outcome (ok, not_found, precondition_failed, ambiguous, canceled, error)."))
	dur, err2 := m.Float64Histogram(NameBucketDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of requests to the bucket, by operation."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return &measured{inner: s, reqs: reqs, dur: dur}, nil
}

type measured struct {
	inner store.Store
	reqs  metric.Int64Counter
	dur   metric.Float64Histogram
}

func (m *measured) done(ctx context.Context, op string, start time.Time, err error) {
	ctx = context.WithoutCancel(ctx)
	m.reqs.Add(ctx, 1, attrs(attribute.String(KeyOperation, op), attribute.String(KeyOutcome, StoreOutcome(err))))
	m.dur.Record(ctx, time.Since(start).Seconds(), attrs(attribute.String(KeyOperation, op)))
}

func (m *measured) Get(ctx context.Context, key string) (*store.Object, error) {
	start := time.Now()
	o, err := m.inner.Get(ctx, key)
	m.done(ctx, OpGet, start, err)
	return o, err
}

// GetData implements store.DataGetter through the wrapped store, counted
// as a get.
func (m *measured) GetData(ctx context.Context, key string) (*store.Object, error) {
	start := time.Now()
	o, err := store.GetData(ctx, m.inner, key)
	m.done(ctx, OpGet, start, err)
	return o, err
}

func (m *measured) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	start := time.Now()
	v, err := m.inner.Put(ctx, key, data, opts)
	m.done(ctx, OpPut, start, err)
	return v, err
}

func (m *measured) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := m.inner.Delete(ctx, key)
	m.done(ctx, OpDelete, start, err)
	return err
}

func (m *measured) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	start := time.Now()
	p, err := m.inner.List(ctx, opts)
	m.done(ctx, OpList, start, err)
	return p, err
}

// NewRangeReader counts the opening of the read (the request); the body
// streams afterwards.
func (m *measured) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	start := time.Now()
	r, err := store.NewRangeReader(ctx, m.inner, key, offset, length)
	m.done(ctx, OpGet, start, err)
	return r, err
}

func (m *measured) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	start := time.Now()
	v, err := store.PutFrom(ctx, m.inner, key, r, size, opts)
	m.done(ctx, OpPut, start, err)
	return v, err
}

// Copy implements store.Copier through the wrapped store, counted as a
// copy.
func (m *measured) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	start := time.Now()
	v, err := store.Copy(ctx, m.inner, src, dst)
	m.done(ctx, OpCopy, start, err)
	return v, err
}

func (m *measured) Close() error { return store.Close(m.inner) }

var (
	_ store.Streamer = (*measured)(nil)
	_ store.Copier   = (*measured)(nil)
	_ store.Closer   = (*measured)(nil)
)
