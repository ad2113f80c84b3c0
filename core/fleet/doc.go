// Package fleet implements celld's bucket ownership protocol for CellB:
// node leases (nodes/<node>.json), ownership records
// (cells/<cell>/own.json) taken by create-only write and raised by
// compare-and-swap, one epoch per activation, release on close,
// self-fencing, and the refusal of a cell whose ownership record was lost.
//
// The decisions are pure functions of what was read and the time (decide.go),
// so they are tested exhaustively. A Node acts on them (its rules) through
// steps that run on the caller's goroutine — installing the lease, one
// renewal round, taking, checking and releasing a cell — over an injected
// store.Store and clock.Clock; Join adds the start-up probe and a thin
// goroutine that runs the renewal step every TTL/3. The seeded simulator
// drives the same steps itself, with no goroutine, and tests broken
// variants by passing other rules: production code carries no test hook.
package fleet
