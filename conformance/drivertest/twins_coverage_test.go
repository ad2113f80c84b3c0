package drivertest

import (
	"testing"

	"github.com/cellb/cellb/conformance/internal/suite"
)

// withoutTwin are the drivertest cases no twin in Twins is declared to
// fail, each with the reason (docs/conformance.md lists them).
var withoutTwin = map[string]string{
	"sql/open":                 noTwinYet,
	"sql/arguments":            noTwinYet,
	"sql/storage-classes":      noTwinYet,
	"sql/multi-statement":      noTwinYet,
	"sql/result":               noTwinYet,
	"sql/errors":               noTwinYet,
	"sql/transactions":         noTwinYet,
	"sql/savepoints":           noTwinYet,
	"sql/page-size-count":      noTwinYet,
	"sql/closed":               noTwinYet,
	"sql/memory":               noTwinYet,
	"auth/arguments":           noTwinYet,
	"auth/deny-attach":         noTwinYet,
	"auth/ignore":              noTwinYet,
	"auth/remove":              noTwinYet,
	"image/deterministic":      noTwinYet,
	"image/matches-file":       noTwinYet,
	"image/wal-image":          noTwinYet,
	"image/rollback-image":     noTwinYet,
	"image/restore-then-write": noTwinYet,
	"image/rejects-garbage":    noTwinYet,
	"capture/declared":         noTwinYet,
	"capture/workload":         noTwinYet,
	"capture/bulk":             noTwinYet,
	"capture/page-sizes":       noTwinYet,
	"capture/memory":           noTwinYet,
	"sessions/declared":        noTwinYet,
	"sessions/filter":          noTwinYet,
	"checkpoint/declared":      noTwinYet,
	"checkpoint/modes":         noTwinYet,
}

const noTwinYet = "no twin written yet (owed: docs/conformance.md, cases without a twin)"

// TestEveryCaseHasATwin: a case that no twin is declared to fail needs
// one, or an exception above saying why not.
func TestEveryCaseHasATwin(t *testing.T) {
	var caught [][]string
	for _, tw := range Twins() {
		caught = append(caught, tw.CaughtBy)
	}
	suite.CheckTwinCoverage(t, CaseNames(), caught, withoutTwin)
}
