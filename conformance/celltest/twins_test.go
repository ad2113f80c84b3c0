package celltest

import (
	"testing"

	"github.com/cellb/cellb/conformance/suite"
)

// withoutTwin are the celltest cases no twin in Twins is declared to fail,
// each with the reason why (docs/conformance.md lists them).
var withoutTwin = map[string]string{
	// Decided inside core/cell alone: no port (driver, log, lease, clock,
	// wake publisher) or option takes part, so no wrong implementation of
	// one can break the promise. Their negative evidence is core/cell's own
	// tests and the mutation runs of gate.go and alarm.go (docs/testing.md).
	"alarm/needs-handler": runtimeOnly + ": the runtime's check of the object's type in SetAlarm (alarm.go) " +
		"is made before any port is touched; short-timers and clock-ahead fail the case only through its positive half (the deadline)",
	"turn/interleave-only-at-yields":   runtimeOnly + ": the input gate (gate.go)",
	"turn/fifo-gate":                   runtimeOnly + ": the input gate's queue order (gate.go)",
	"turn/stub-call-yields":            runtimeOnly + ": a stub call yielding its handler (gate.go)",
	"turn/fan-out":                     runtimeOnly + ": goroutines sharing a handler's turn (gate.go)",
	"turn/not-in-turn":                 runtimeOnly + ": storage refusing contexts outside the turn (gate.go)",
	"turn/fetch":                       runtimeOnly + ": the runtime's dispatch of requests to an http.Handler object",
	"reset/block-concurrency-while":    runtimeOnly + ": BlockConcurrencyWhile's failure, panic and gate",
	"reset/constructor-error":          runtimeOnly + ": a constructor's error made an ActivationError",
	"alarm/rearm-wins":                 runtimeOnly + ": alarmAfterSuccess/alarmAfterFailure (alarmpolicy.go, its own unit tests)",
	"alarm/one-at-a-time":              runtimeOnly + ": the alarm scheduler's one run per cell (alarm.go)",
	"alarm/internal-failure-uncounted": runtimeOnly + ": the scheduler's internal failures never reach the counted path (alarm.go)",
	"websocket/order": runtimeOnly + ": a socket's read loop and the input gate order the events, and each socket's send queue " +
		"the frames (sockets.go, websocket.go); the case fails on a send queue that reverses its frames (tried once by hand)",

	// A twin breaks it only through a timed check.
	"lifecycle/close-drains": "Close's draining is core/cell's own; the one port-level fault it shows " +
		"(a log that acknowledges at once: AckBeforeDurable) is seen only by the case's check that Close does not return " +
		"within a short settle time, which can miss on a slow machine (it did on the cgo driver), so no twin is declared",
}

const runtimeOnly = "no twin through a port or option: decided inside core/cell, which none of them reaches " +
	"(a twin would need a hook in production code)"

// TestEveryCaseHasATwin: a case that no twin is declared to fail needs
// one, or an exception above saying why not. (The twins themselves run
// in the driver modules, through RunTwins: this package has no driver.)
func TestEveryCaseHasATwin(t *testing.T) {
	suite.CheckTwinCoverage(t, CaseNames(), suite.CaughtBy(Twins()), withoutTwin)
}
