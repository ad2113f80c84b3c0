package r2test_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/conformance/r2test"
	"github.com/cellb/cellb/core/store/memstore"
)

func TestMemstorePasses(t *testing.T) {
	r2test.Run(t, memstore.New(), r2test.Real)
}

// caughtBy names, for each twin, the cases that must fail on it.
var caughtBy = map[string][]string{
	"drops-envelope":         {"put-get", "format", "multipart"},
	"ignores-onlyif":         {"conditional-put", "conditional-get", "conditional-race"},
	"stale-etag":             {"etag", "conditional-put"},
	"headers-in-record-only": {"store-headers"},
	"decompresses-gzip":      {"gzip-body"},
	"ignores-store-headers":  {"celld-fixture"},
	"ignores-range":          {"range"},
	"skips-checksums":        {"checksums"},
	"deletes-first-key":      {"delete"},
	"ignores-delimiter":      {"list"},
	"fixes-invalid-keys":     {"invalid-keys"},
	"drops-plain-metadata":   {"no-envelope"},
	"encodes-keys-twice":     {"key-encoding"},
}

func TestEveryTwinFailsTheSuite(t *testing.T) {
	twins := r2test.Twins()
	if len(twins) != len(caughtBy) {
		t.Fatalf("%d twins, %d expectations", len(twins), len(caughtBy))
	}
	for _, twin := range twins {
		t.Run(twin.Name, func(t *testing.T) {
			want, ok := caughtBy[twin.Name]
			if !ok {
				t.Fatalf("no expectation for twin %q", twin.Name)
			}
			failed := r2test.Check(t.Context(), memstore.New(), twin.Bind)
			if len(failed) == 0 {
				t.Fatalf("the suite passed a binding that %s", twin.Flaw)
			}
			for _, name := range want {
				if !slices.Contains(r2test.CaseNames(), name) {
					t.Fatalf("expectation names unknown case %q", name)
				}
				if _, ok := failed[name]; !ok {
					t.Errorf("case %s passed a binding that %s", name, twin.Flaw)
				}
			}
			for name, f := range failed {
				t.Logf("%s: %v", name, f)
			}
		})
	}
	if failed := r2test.Check(t.Context(), memstore.New(), r2test.Real); len(failed) != 0 {
		t.Fatalf("Check fails core/r2 itself: %v", failed)
	}
}

// withoutTwin are the cases no twin in r2test.Twins is declared to fail,
// each with the reason why (none: every case has one).
var withoutTwin = map[string]string{}

// TestEveryCaseHasATwin: a case that no twin is declared to fail needs
// one, or an exception above saying why not.
func TestEveryCaseHasATwin(t *testing.T) {
	suite.CheckTwinCoverage(t, r2test.CaseNames(), slices.Collect(maps.Values(caughtBy)), withoutTwin)
}
