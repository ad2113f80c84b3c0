package brokenstore_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/conformance/storetest/brokenstore"
	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestEveryTwinFailsTheSuite: the suite rejects every twin
// (brokenstore.RunTwins), and every broken store of brokenstore.All is a
// twin with cases that catch it.
func TestEveryTwinFailsTheSuite(t *testing.T) {
	twins := brokenstore.Twins()
	if len(twins) != len(brokenstore.All()) {
		t.Fatalf("%d twins for %d broken stores", len(twins), len(brokenstore.All()))
	}
	for _, tw := range twins {
		if len(tw.CaughtBy) == 0 {
			t.Errorf("twin %s names no case that catches it", tw.Name)
		}
	}
	bucket := memstore.New()
	brokenstore.RunTwins(t, storetest.HarnessFunc(func(context.Context) (store.Store, error) { return bucket, nil }))
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
		"copy-overwrites":           {"probe", "create-only", "compare-and-swap", "read-after-write", "metadata", "stream-put"},
		"copy-drops-metadata":       {"probe", "create-only", "compare-and-swap", "read-after-write", "metadata", "stream-put"},
	}
	for _, twin := range brokenstore.All() {
		only, ok := sound[twin.Name]
		if !ok {
			continue // its flaw touches every case
		}
		t.Run(twin.Name, func(t *testing.T) {
			broken := twin.Wrap(memstore.New())
			rep, err := storetest.RunReport(t.Context(), storetest.HarnessFunc(func(context.Context) (store.Store, error) {
				return broken, nil
			}), suite.Only(only...), storetest.LargeObjectSize(brokenstore.TearThreshold))
			if err != nil || !rep.OK() {
				t.Fatalf("unrelated cases failed: %s (%v)", rep, err)
			}
		})
	}
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
				suite.Skip("large-object"))
			return
		}
	}
	t.Fatalf("no twin %q", name)
}

// withoutTwin are the storetest cases no twin in brokenstore.Twins is
// declared to fail, each with the reason (docs/conformance.md lists them).
var withoutTwin = map[string]string{}

// TestEveryCaseHasATwin: a case that no twin is declared to fail needs
// one, or an exception above saying why not.
func TestEveryCaseHasATwin(t *testing.T) {
	suite.CheckTwinCoverage(t, storetest.CaseNames(), suite.CaughtBy(brokenstore.Twins()), withoutTwin)
}
