package storetest_test

import (
	"testing"

	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestBucketOverStorePasses runs the suite on the portable Bucket over a
// Store adapted with DriverOf: the Bucket's own rules (validation,
// clamping, error kinds, ambiguity) must keep a conforming store
// conforming.
func TestBucketOverStorePasses(t *testing.T) {
	storetest.Run(t, shared(store.Wrap(memstore.New())))
}
