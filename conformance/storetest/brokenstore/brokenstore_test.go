package brokenstore_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/conformance/storetest/brokenstore"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// caughtBy names, for each twin, the cases that must fail on it. Each
// list holds only cases that catch the flaw every time; others may fail
// too (a flaw often spreads), and the test logs them.
var caughtBy = map[string][]string{
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
}

func TestEveryTwinFailsTheSuite(t *testing.T) {
	twins := brokenstore.All()
	if len(twins) != len(caughtBy) {
		t.Fatalf("%d twins, %d expectations", len(twins), len(caughtBy))
	}
	cases := map[string]bool{}
	for _, c := range storetest.Cases() {
		cases[c.Name] = true
	}
	for _, twin := range twins {
		t.Run(twin.Name, func(t *testing.T) {
			want, ok := caughtBy[twin.Name]
			if !ok {
				t.Fatalf("no expectation for twin %q", twin.Name)
			}
			var opts []storetest.Option
			if twin.Name != "tears-large-objects" {
				// The large object only matters to the tearing twin; keep
				// the other runs light.
				opts = append(opts, storetest.LargeObjectSize(2*brokenstore.TearThreshold))
			}
			if !strings.HasPrefix(twin.Name, "truncates-") && !strings.HasPrefix(twin.Name, "ignores-range") &&
				!strings.HasPrefix(twin.Name, "publishes-") && !strings.HasPrefix(twin.Name, "ignores-stream") {
				// Likewise the streamed bodies, for twins that do not
				// break streaming.
				opts = append(opts, storetest.StreamObjectSize(3*brokenstore.TruncateAt+17))
			}
			broken := twin.Wrap(memstore.New())
			rep := storetest.RunReport(t.Context(), storetest.HarnessFunc(func(context.Context) (store.Store, error) {
				return broken, nil
			}), opts...)
			if rep.OK() {
				t.Fatalf("the suite passed a store that %s", twin.Flaw)
			}
			failed := rep.FailedCases()
			for _, name := range want {
				if !cases[name] {
					t.Fatalf("expectation names unknown case %q", name)
				}
				if !slices.Contains(failed, name) {
					r, _ := rep.Case(name)
					t.Errorf("case %s did not catch a store that %s (status %s)", name, twin.Flaw, r.Status)
				}
			}
			for _, name := range failed {
				r, _ := rep.Case(name)
				t.Logf("%s: %s", name, firstLine(r.Reason))
			}
		})
	}
}

// TestTwinsAreOtherwiseSound shows each twin breaks only what it claims:
// a run of the cases outside its expectation that are unrelated to its
// flaw still passes, so the failures above come from the flaw.
func TestTwinsAreOtherwiseSound(t *testing.T) {
	sound := map[string][]string{
		"ignores-if-none-match":     {"read-after-write", "pagination", "metadata", "large-object"},
		"ignores-if-match":          {"create-only", "read-after-write", "pagination", "large-object"},
		"unordered-list":            {"probe", "create-only", "compare-and-swap", "read-after-write", "metadata"},
		"tears-large-objects":       {"probe", "create-only", "compare-and-swap", "pagination", "metadata"},
		"ignores-cancel":            {"probe", "create-only", "compare-and-swap", "pagination"},
		"accepts-invalid-keys":      {"probe", "create-only", "compare-and-swap", "pagination"},
		"drops-metadata":            {"probe", "create-only", "compare-and-swap", "pagination"},
		"repeats-across-pages":      {"probe", "create-only", "compare-and-swap", "read-after-write"},
		"busy-directories":          {"probe", "create-only", "compare-and-swap", "version-changes", "metadata"},
		"truncates-streams":         {"probe", "create-only", "read-after-write", "stream-range", "stream-conditions", "large-object"},
		"ignores-range":             {"probe", "read-after-write", "stream-put", "stream-failure", "stream-conditions"},
		"publishes-partial-bodies":  {"probe", "read-after-write", "stream-range", "stream-conditions"},
		"ignores-stream-conditions": {"probe", "create-only", "compare-and-swap", "stream-put", "stream-range", "stream-failure"},
		"missing-delete-fails":      {"probe", "create-only", "compare-and-swap", "read-after-write", "pagination"},
		"nesting-fails-opaquely":    {"probe", "create-only", "compare-and-swap", "read-after-write", "delete", "pagination"},
	}
	for _, twin := range brokenstore.All() {
		only, ok := sound[twin.Name]
		if !ok {
			continue // its flaw touches every case
		}
		t.Run(twin.Name, func(t *testing.T) {
			broken := twin.Wrap(memstore.New())
			rep := storetest.RunReport(t.Context(), storetest.HarnessFunc(func(context.Context) (store.Store, error) {
				return broken, nil
			}), storetest.Only(only...), storetest.LargeObjectSize(brokenstore.TearThreshold))
			if !rep.OK() {
				t.Fatalf("unrelated cases failed: %s", rep)
			}
		})
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestRunFailsUnderGoTest proves the testing.T entry point reports a
// broken store as failing, not only RunReport: it runs a child test binary
// whose only test is the suite on a twin, and expects it to fail.
func TestRunFailsUnderGoTest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child test process")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestChildSuiteOnTwin$", "-test.v")
	cmd.Env = append(os.Environ(), "BROKENSTORE_CHILD=ignores-if-none-match")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the child run did not fail (err %v):\n%s", err, out)
	}
	for _, want := range []string{"--- FAIL: TestChildSuiteOnTwin/create-only", "ignores If-None-Match", "--- PASS: TestChildSuiteOnTwin/read-after-write"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}

// TestChildSuiteOnTwin runs only inside TestRunFailsUnderGoTest's child.
func TestChildSuiteOnTwin(t *testing.T) {
	name := os.Getenv("BROKENSTORE_CHILD")
	if name == "" {
		t.Skip("runs only as the child of TestRunFailsUnderGoTest")
	}
	for _, twin := range brokenstore.All() {
		if twin.Name == name {
			broken := twin.Wrap(memstore.New())
			storetest.Run(t, storetest.HarnessFunc(func(context.Context) (store.Store, error) { return broken, nil }),
				storetest.Skip("large-object"))
			return
		}
	}
	t.Fatalf("no twin %q", name)
}

// withoutTwin are the storetest cases no twin in brokenstore.All is
// declared to fail, each with the reason (docs/conformance.md lists them).
var withoutTwin = map[string]string{}

// TestEveryCaseHasATwin: a case that no twin is declared to fail needs
// one, or an exception above saying why not.
func TestEveryCaseHasATwin(t *testing.T) {
	var names []string
	for _, c := range storetest.Cases() {
		names = append(names, c.Name)
	}
	suite.CheckTwinCoverage(t, names, slices.Collect(maps.Values(caughtBy)), withoutTwin)
}
