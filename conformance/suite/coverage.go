package suite

import (
	"slices"
	"strings"
	"testing"
)

// Coverage is how a suite's cases stand against its negative twins.
type Coverage struct {
	// Missing are the cases no twin names and no exception excuses (an
	// exception without a reason excuses nothing).
	Missing []string
	// Stale are exceptions for a case a twin now names, or for no case
	// of the suite.
	Stale []string
	// Unknown are the names twins declare that are no case of the suite.
	Unknown []string
}

// OK reports whether every case has a twin or a reasoned exception, and
// every declaration names a case.
func (c Coverage) OK() bool { return len(c.Missing)+len(c.Stale)+len(c.Unknown) == 0 }

// TwinCoverage checks the project's rule that every case has a negative
// twin: cases are the suite's case names, caughtBy the cases each twin
// declares it must fail, and exceptions the cases that have no twin, each
// with the reason why. The lists it returns are in the order of cases
// (Unknown and the unknown part of Stale sorted).
func TwinCoverage(cases []string, caughtBy [][]string, exceptions map[string]string) Coverage {
	var cov Coverage
	known := map[string]bool{}
	for _, name := range cases {
		known[name] = true
	}
	covered := map[string]bool{}
	for _, names := range caughtBy {
		for _, name := range names {
			covered[name] = true
			if !known[name] && !slices.Contains(cov.Unknown, name) {
				cov.Unknown = append(cov.Unknown, name)
			}
		}
	}
	for _, name := range cases {
		reason, excused := exceptions[name]
		switch {
		case covered[name] && excused:
			cov.Stale = append(cov.Stale, name)
		case !covered[name] && strings.TrimSpace(reason) == "":
			cov.Missing = append(cov.Missing, name)
		}
	}
	var foreign []string
	for name := range exceptions {
		if !known[name] {
			foreign = append(foreign, name)
		}
	}
	slices.Sort(foreign)
	slices.Sort(cov.Unknown)
	cov.Stale = append(cov.Stale, foreign...)
	return cov
}

// CheckTwinCoverage fails t for every case without a twin or a reasoned
// exception, every stale exception and every twin declaration that names
// no case.
func CheckTwinCoverage(t testing.TB, cases []string, caughtBy [][]string, exceptions map[string]string) {
	t.Helper()
	cov := TwinCoverage(cases, caughtBy, exceptions)
	for _, name := range cov.Missing {
		t.Errorf("case %s has no negative twin: add one that the case rejects, or an exception saying why it cannot have one", name)
	}
	for _, name := range cov.Stale {
		t.Errorf("the exception for %s is stale: a twin covers it, or the suite has no such case", name)
	}
	for _, name := range cov.Unknown {
		t.Errorf("a twin declares case %s, which the suite does not have", name)
	}
}
