package drivertest

import (
	"slices"
	"testing"

	"github.com/cellb/cellb/conformance/suite"
)

// RunTwins shows the suite rejects every applicable negative twin of the
// harness's driver: first the driver itself must pass each case a twin is
// caught by (otherwise a rejection would prove nothing), then each twin
// must fail every case its Twin entry names. It runs as subtests
// "twin/<name>".
func RunTwins(t *testing.T, h Harness) {
	t.Helper()
	h, err := h.resolved()
	if err != nil {
		t.Fatal(err)
	}
	if h.Dir == "" {
		h.Dir = t.TempDir()
	}
	caps := h.Driver.Capabilities()
	var twins []Twin
	var needed []string
	for _, tw := range Twins() {
		if tw.Applies(caps) {
			twins = append(twins, tw)
			for _, c := range tw.CaughtBy {
				if !slices.Contains(needed, c) {
					needed = append(needed, c)
				}
			}
		}
	}
	base := h
	base.Cases = needed
	baseline, err := RunReport(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	broken := baseline.Failed()
	if len(broken) > 0 {
		t.Errorf("the driver itself fails cases the twins are checked against, so their rejection proves nothing there:\n%s", baseline)
	}
	for _, tw := range twins {
		t.Run("twin/"+tw.Name, func(t *testing.T) {
			twin := tw.Wrap(h.Driver)
			for _, name := range tw.CaughtBy {
				if slices.Contains(broken, name) {
					t.Skipf("inconclusive: the unbroken driver already fails %s", name)
				}
				// A case that does not apply to this driver (e.g. it
				// locks its file, so BEGIN IMMEDIATE is moot) cannot
				// catch a twin that keeps the driver's declarations. A
				// twin that declares more (FalseSessions) runs the case
				// the driver itself skips.
				if res, ok := baseline.Result(name); ok && res.Skipped && twin.Capabilities() == caps {
					t.Skipf("not applicable: %s is skipped for this driver (%s)", name, res.Reason)
				}
			}
			th := h
			th.Driver = twin
			ExpectRejected(t, th, tw.CaughtBy...)
		})
	}
}

// ExpectRejected runs the named cases on h's driver (usually a broken one)
// and fails t unless every one of them fails, logging why each did.
func ExpectRejected(t *testing.T, h Harness, cases ...string) {
	t.Helper()
	if len(cases) == 0 {
		t.Fatal("ExpectRejected needs the names of the cases that must fail")
	}
	for _, name := range cases {
		if !slices.Contains(CaseNames(), name) {
			t.Fatalf("ExpectRejected: no case named %q", name)
		}
	}
	h.Cases = cases
	rep, err := RunReport(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range suite.Judge(cases, rep.named()) {
		name := cases[i]
		res, _ := rep.Result(name)
		switch v {
		case suite.NotRun:
			t.Errorf("%s: case %s did not run", h.Driver.Name(), name)
		case suite.NotApplicable:
			t.Errorf("%s: case %s was skipped (%s), so it cannot reject the twin", h.Driver.Name(), name, res.Reason)
		case suite.Missed:
			t.Errorf("%s: case %s passed; the suite failed to reject this broken driver (seed %d)", h.Driver.Name(), name, rep.Seed)
		default:
			t.Logf("%s rejected by %s: %s", h.Driver.Name(), name, clip(res.Failures[0]))
		}
	}
}
