package store_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// flakyPuts fails the first fail puts with err, then passes them on.
type flakyPuts struct {
	store.Store
	mu   sync.Mutex
	fail int
	err  error
	puts int
}

func (f *flakyPuts) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	f.mu.Lock()
	f.puts++
	failing := f.puts <= f.fail
	f.mu.Unlock()
	if failing {
		return "", f.err
	}
	return f.Store.Put(ctx, key, data, opts)
}

// TestPutRetryingDoesNotRetryAFailedCondition: a create-only write that
// finds the object there fails at once; retrying cannot change the answer.
func TestPutRetryingDoesNotRetryAFailedCondition(t *testing.T) {
	s := &flakyPuts{Store: memstore.New()}
	if _, err := s.Store.Put(context.Background(), "k", []byte("theirs"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	err := store.PutRetrying(s, "k", []byte("ours"), store.PutOptions{Condition: store.IfAbsent}, store.Retry{Retries: 3, Delay: time.Millisecond, Timeout: time.Second})
	if !store.IsPreconditionFailed(err) || s.puts != 1 {
		t.Fatalf("err = %v after %d puts, want a precondition failure after 1", err, s.puts)
	}
}

// TestPutRetryingRetriesUntilAPutSucceeds: failures, ambiguous ones
// included, are retried, each after a delay on the given clock that
// doubles.
func TestPutRetryingRetriesUntilAPutSucceeds(t *testing.T) {
	fake := clock.NewFake(time.Unix(0, 0))
	s := &flakyPuts{Store: memstore.New(), fail: 2, err: store.Ambiguous("put", "k", errors.New("connection reset"))}
	done := make(chan error, 1)
	go func() {
		done <- store.PutRetrying(s, "k", []byte("v"), store.PutOptions{}, store.Retry{Retries: 3, Delay: time.Second, Timeout: time.Minute, Clock: fake})
	}()
	// The first retry waits 1s, the second 2s.
	for _, d := range []time.Duration{time.Second, 2 * time.Second} {
		for fake.Pending() == 0 {
			runtime.Gosched()
		}
		at, _ := fake.NextDeadline()
		if wait := at.Sub(fake.Now()); wait != d {
			t.Fatalf("retry waits %v, want %v", wait, d)
		}
		fake.Advance(d)
	}
	if err := <-done; err != nil {
		t.Fatalf("PutRetrying = %v after %d puts, want success on the third", err, s.puts)
	}
	if s.puts != 3 {
		t.Fatalf("%d puts, want 3", s.puts)
	}
	if got, err := s.Store.Get(context.Background(), "k"); err != nil || string(got.Data) != "v" {
		t.Fatalf("Get = %v, %v", got, err)
	}
}

// TestPutRetryingGivesUp: once the retries are spent, or Stop says so,
// the last error is returned.
func TestPutRetryingGivesUp(t *testing.T) {
	boom := errors.New("bucket unavailable")
	s := &flakyPuts{Store: memstore.New(), fail: 100, err: boom}
	err := store.PutRetrying(s, "k", []byte("v"), store.PutOptions{}, store.Retry{Retries: 2, Delay: time.Microsecond})
	if !errors.Is(err, boom) || s.puts != 3 {
		t.Fatalf("err = %v after %d puts, want %v after 3", err, s.puts, boom)
	}
	s = &flakyPuts{Store: memstore.New(), fail: 100, err: boom}
	err = store.PutRetrying(s, "k", []byte("v"), store.PutOptions{}, store.Retry{Retries: 5, Delay: time.Microsecond, Stop: func() bool { return true }})
	if !errors.Is(err, boom) || s.puts != 1 {
		t.Fatalf("err = %v after %d puts, want %v after 1 (Stop)", err, s.puts, boom)
	}
}
