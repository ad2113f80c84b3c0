package store

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/cellb/cellb/core/clock"
)

// Retry says how a write to the bucket is retried: the one retry policy
// of every writer that retries (the durability logs' uploads, the wake
// service's entries).
type Retry struct {
	// Retries after the first attempt; Delay before the first retry,
	// doubled after each; Timeout per attempt (none when zero).
	Retries int
	Delay   time.Duration
	Timeout time.Duration
	// Clock paces the delays (default: the real clock).
	Clock clock.Clock
	// Stop, when it reports true after a failed attempt, ends the
	// retries (for example: the log was abandoned).
	Stop func() bool
	// Logger, when set, gets a warning for each failed attempt that is
	// retried.
	Logger *slog.Logger
}

// Do runs write, retrying a failure as r says, and returns nil once an
// attempt succeeds or the last attempt's error once the retries are spent
// or r.Stop says to stop. Each attempt gets a fresh context carrying
// r.Timeout. A failed condition (ErrPreconditionFailed) is returned at
// once: the object is there, and asking again cannot change that. An
// ambiguous failure (ErrAmbiguous) is retried like any other: a retry
// writes the same object again, so the caller must only retry writes
// whose repetition is harmless or detected (a create-only write that
// meets its own earlier attempt fails its condition).
func (r Retry) Do(key string, write func(ctx context.Context) error) error {
	clk := clock.Or(r.Clock)
	delay := r.Delay
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if r.Timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		}
		err := write(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if attempt >= r.Retries || IsPreconditionFailed(err) || (r.Stop != nil && r.Stop()) {
			return err
		}
		if r.Logger != nil {
			r.Logger.Warn("bucket write failed; retrying", "key", key, "attempt", attempt+1, "err", err)
		}
		t := clk.NewTimer(delay)
		<-t.C()
		delay *= 2
	}
}

// PutRetrying writes data at key with opts, retrying failures as r says
// (see Retry.Do).
func PutRetrying(s Store, key string, data []byte, opts PutOptions, r Retry) error {
	return r.Do(key, func(ctx context.Context) error {
		_, err := s.Put(ctx, key, data, opts)
		return err
	})
}

// PutFromRetrying is PutRetrying for a body streamed with PutFrom (size
// unknown): body is called once per attempt for a fresh reader of the
// same bytes, closed when the attempt ends.
func PutFromRetrying(s Store, key string, body func() io.ReadCloser, opts PutOptions, r Retry) error {
	return r.Do(key, func(ctx context.Context) error {
		rc := body()
		defer rc.Close()
		_, err := PutFrom(ctx, s, key, rc, -1, opts)
		return err
	})
}
