package brokenstore

import (
	"context"
	"testing"

	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store"
)

// twinCaughtBy names, for each broken store of All, the storetest cases
// that must fail on it. Each list holds only cases that catch the flaw every
// time; others may fail too (a flaw often spreads).
var twinCaughtBy = map[string][]string{
	"ignores-if-none-match":     {"probe", "create-only", "contention-create"},
	"ignores-if-match":          {"probe", "compare-and-swap", "contention-cas"},
	"stale-reads":               {"probe", "compare-and-swap", "read-after-write", "version-changes", "get-data"},
	"stale-data-reads":          {"get-data"},
	"unordered-list":            {"list-order", "delimiter", "pagination"},
	"acks-failed-writes":        {"probe", "create-only", "compare-and-swap", "metadata", "invalid-keys"},
	"loses-writes":              {"read-after-write", "list-after-write", "pagination", "no-lost-update"},
	"tears-large-objects":       {"large-object"},
	"ignores-cancel":            {"context-cancel"},
	"accepts-invalid-keys":      {"invalid-keys"},
	"drops-metadata":            {"metadata"},
	"repeats-across-pages":      {"list-order", "delimiter", "pagination"},
	"busy-directories":          {"concurrent-siblings", "pagination"},
	"truncates-streams":         {"stream-put", "stream-failure"},
	"ignores-range":             {"stream-range"},
	"publishes-partial-bodies":  {"stream-failure", "stream-put"},
	"ignores-stream-conditions": {"stream-conditions"},
	"drops-headers":             {"content-headers", "headers-conditional"},
	"drops-headers-on-replace":  {"headers-conditional"},
	"headless-streams":          {"content-headers", "headers-conditional"},
	"decompresses-gzip":         {"gzip-body"},
	"missing-delete-fails":      {"delete"},
	"nesting-fails-opaquely":    {"object-and-prefix"},
	"repeats-versions":          {"delete-recreate-swap"},
	"deletes-by-prefix":         {"delete"},
	"copy-overwrites":           {"copy"},
	"copy-drops-metadata":       {"copy"},
}

// Twins are storetest's negative twins: for each broken store of All, a
// harness whose store has that flaw, and the cases that must reject it.
// (They live here, not in storetest, because cellb links storetest for
// diagnose and ships no test doubles.)
func Twins() []suite.Twin[storetest.Harness] {
	var out []suite.Twin[storetest.Harness]
	for _, b := range All() {
		out = append(out, suite.Twin[storetest.Harness]{
			Name: b.Name, Flaw: b.Flaw, CaughtBy: twinCaughtBy[b.Name],
			Wrap: func(h storetest.Harness) storetest.Harness { return brokenHarness{h: h, wrap: b.Wrap} },
		})
	}
	return out
}

// RunTwins shows storetest rejects every twin on h's bucket
// (suite.RunTwins): first the cases the twins name must pass on h itself,
// then each must fail on every twin that names it. opts go to every run.
func RunTwins(t *testing.T, h storetest.Harness, opts ...suite.Option) {
	t.Helper()
	suite.RunTwins(t, h, Twins(), storetest.RunReport, opts...)
}

// brokenHarness gives the first store of h a flaw. It has no second
// client: a twin's state (a stale copy, a version counter) is its one
// wrapper's, so the cross-client checks use that one client.
type brokenHarness struct {
	h    storetest.Harness
	wrap func(store.Store) store.Store
}

func (b brokenHarness) MakeStore(ctx context.Context) (store.Store, error) {
	s, err := b.h.MakeStore(ctx)
	if err != nil {
		return nil, err
	}
	return b.wrap(s), nil
}

// Close does nothing: h is the caller's.
func (brokenHarness) Close() error { return nil }
