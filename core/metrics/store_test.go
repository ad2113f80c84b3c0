package metrics

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// recorder is a MeterProvider whose request counter records each
// request's operation and outcome.
type recorder struct {
	noop.MeterProvider
	mu  sync.Mutex
	got []string
}

func (r *recorder) Meter(string, ...metric.MeterOption) metric.Meter { return recMeter{r: r} }

type recMeter struct {
	noop.Meter
	r *recorder
}

func (m recMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return recCounter{r: m.r}, nil
}

type recCounter struct {
	noop.Int64Counter
	r *recorder
}

func (c recCounter) Add(_ context.Context, _ int64, opts ...metric.AddOption) {
	set := metric.NewAddConfig(opts).Attributes()
	op, _ := set.Value(attribute.Key(KeyOperation))
	out, _ := set.Value(attribute.Key(KeyOutcome))
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.got = append(c.r.got, op.AsString()+" "+out.AsString())
}

func (r *recorder) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := strings.Join(r.got, ", ")
	r.got = nil
	return s
}

// lossy is a driver middleware whose puts of "lost" read the whole body
// and then fail with an error nothing classifies (a connection reset
// before the answer), and whose copies are unsupported.
type lossy struct{ store.Driver }

var errReset = errors.New("connection reset")

func (l lossy) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	if key == "lost" {
		io.Copy(io.Discard, r)
		return "", errReset
	}
	return l.Driver.PutFrom(ctx, key, r, size, opts)
}

func (l lossy) Copy(context.Context, string, string) (store.Version, error) {
	return "", store.ErrCopyUnsupported
}

// TestInstrumentedStoreOutcomes: each request is counted once with the
// outcome the caller sees, decided by the Bucket's rules on the driver's
// raw errors.
func TestInstrumentedStoreOutcomes(t *testing.T) {
	ctx := t.Context()
	rec := &recorder{}
	s, err := InstrumentStore(rec, memstore.New())
	if err != nil {
		t.Fatal(err)
	}
	step := func(want string, call func() error, check func(error) bool) {
		t.Helper()
		if err := call(); !check(err) {
			t.Fatalf("%s: the caller got %v", want, err)
		}
		if got := rec.take(); got != want {
			t.Fatalf("recorded %q, want %q", got, want)
		}
	}
	isNil := func(err error) bool { return err == nil }
	step("put ok", func() error { _, err := s.Put(ctx, "k", []byte("x"), store.PutOptions{}); return err }, isNil)
	step("get not_found", func() error { _, err := s.Get(ctx, "missing"); return err }, store.IsNotFound)
	step("put precondition_failed", func() error {
		_, err := s.Put(ctx, "k", []byte("y"), store.PutOptions{Condition: store.IfAbsent})
		return err
	}, store.IsPreconditionFailed)
	step("get ok", func() error { _, err := store.GetData(ctx, s, "k"); return err }, isNil)
	step("list ok", func() error { _, err := s.List(ctx, store.ListOptions{}); return err }, isNil)
	step("delete ok", func() error { return s.Delete(ctx, "missing") }, isNil)
	step("copy ok", func() error { _, err := store.Copy(ctx, s, "k", "k2"); return err }, isNil)

	s, err = InstrumentStore(rec, store.Wrap(memstore.New(), func(d store.Driver) store.Driver { return lossy{d} }))
	if err != nil {
		t.Fatal(err)
	}
	step("put ambiguous", func() error {
		_, err := store.PutFrom(ctx, s, "lost", strings.NewReader("body"), 4, store.PutOptions{})
		return err
	}, store.IsAmbiguous)
	step("put ok", func() error { _, err := s.Put(ctx, "k", []byte("x"), store.PutOptions{}); return err }, isNil)
	step("get ok, put ok", func() error { _, err := store.Copy(ctx, s, "k", "k2"); return err }, isNil)
}
