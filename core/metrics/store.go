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
	// OpCopy is a copy inside the bucket (store.Copier). On a store that
	// cannot copy inside the bucket the copy streams, and counts as the
	// get and the put it makes.
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
// the durability mode. The wrapper is a store.Middleware around s's driver
// (see store.Wrap): each request the driver makes is measured, a retried
// read twice, and its outcome is the one the Bucket reports. A nil mp
// returns s itself.
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
	return store.Wrap(s, func(d store.Driver) store.Driver {
		return &measured{inner: d, reqs: reqs, dur: dur}
	}), nil
}

// measured is the Middleware of InstrumentStore.
type measured struct {
	inner store.Driver
	reqs  metric.Int64Counter
	dur   metric.Float64Histogram
}

// done records one request; err is the error the caller will see.
func (m *measured) done(ctx context.Context, op string, start time.Time, err error) {
	ctx = context.WithoutCancel(ctx)
	m.reqs.Add(ctx, 1, attrs(attribute.String(KeyOperation, op), attribute.String(KeyOutcome, StoreOutcome(err))))
	m.dur.Record(ctx, time.Since(start).Seconds(), attrs(attribute.String(KeyOperation, op)))
}

// NewRangeReader counts the opening of the read (the request); the body
// streams afterwards.
func (m *measured) NewRangeReader(ctx context.Context, key string, offset, length int64, dataOnly bool) (*store.Reader, error) {
	start := time.Now()
	r, err := m.inner.NewRangeReader(ctx, key, offset, length, dataOnly)
	m.done(ctx, OpGet, start, store.ReadError(m.inner, "get", key, err))
	return r, err
}

func (m *measured) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	start := time.Now()
	body := &sentBody{r: r}
	v, err := m.inner.PutFrom(ctx, key, body, size, opts)
	sent := body.eof || (size >= 0 && body.n == size)
	m.done(ctx, OpPut, start, store.WriteError(m.inner, "put", key, opts.Condition, sent, err))
	return v, err
}

func (m *measured) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := m.inner.Delete(ctx, key)
	out := store.ReadError(m.inner, "delete", key, err)
	if store.IsNotFound(out) {
		out = nil // deleting a missing key succeeds
	}
	m.done(ctx, OpDelete, start, out)
	return err
}

func (m *measured) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	start := time.Now()
	p, err := m.inner.List(ctx, opts)
	m.done(ctx, OpList, start, store.ReadError(m.inner, "list", opts.Prefix, err))
	return p, err
}

// Copy counts a copy inside the bucket; a driver that cannot copy made no
// request, and the streamed copy that follows counts as a get and a put.
func (m *measured) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	start := time.Now()
	v, err := m.inner.Copy(ctx, src, dst)
	if errors.Is(err, store.ErrCopyUnsupported) {
		return v, err
	}
	m.done(ctx, OpCopy, start, store.WriteError(m.inner, "copy", dst, store.IfAbsent, true, err))
	return v, err
}

func (m *measured) Classify(err error) store.ErrorClass { return m.inner.Classify(err) }

func (m *measured) Close() error { return m.inner.Close() }

// sentBody records how much of a put's body the driver read, to tell an
// ambiguous failure from one that sent nothing complete.
type sentBody struct {
	r   io.Reader
	n   int64
	eof bool
}

func (b *sentBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	b.eof = b.eof || err == io.EOF
	return n, err
}
