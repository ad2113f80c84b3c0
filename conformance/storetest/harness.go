package storetest

import (
	"context"

	"github.com/cellb/cellb/core/store"
)

// Harness connects the suite to the Store under test.
type Harness interface {
	// MakeStore returns a client of the bucket under test. The bucket may
	// hold other data: the suite works under its own prefix.
	MakeStore(ctx context.Context) (store.Store, error)
	// Close releases whatever the harness holds. The suite closes the
	// stores it made (see store.Close) itself; the harness is the
	// caller's, who closes it after the run (RunTwins runs several on
	// one harness).
	Close() error
}

// SecondClientHarness is a Harness that can open a second, independent
// client of the same bucket (its own connections and caches), so the suite
// can check that one client sees another's writes and honours its
// versions. Without it, those checks run against a single client and the
// report says so.
type SecondClientHarness interface {
	Harness
	MakeSecondStore(ctx context.Context) (store.Store, error)
}

// HarnessFunc is a SecondClientHarness whose two clients are two calls of
// the function. For an in-memory store, return the same instance twice.
type HarnessFunc func(ctx context.Context) (store.Store, error)

// MakeStore calls f.
func (f HarnessFunc) MakeStore(ctx context.Context) (store.Store, error) { return f(ctx) }

// MakeSecondStore calls f again.
func (f HarnessFunc) MakeSecondStore(ctx context.Context) (store.Store, error) { return f(ctx) }

// Close does nothing.
func (HarnessFunc) Close() error { return nil }
