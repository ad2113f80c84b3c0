// Package fleet implements celld's bucket ownership protocol for CellB:
// node leases (nodes/<node>.json), ownership records
// (cells/<cell>/own.json) taken by create-only write and raised by
// compare-and-swap, one epoch per activation, release on close,
// self-fencing, and the refusal of a cell whose ownership record was lost.
//
// The decisions are pure functions of what was read and the time (decide.go),
// so they are tested exhaustively and driven by a seeded simulator; the
// Lease type wires them to a store.Store and a clock.Clock.
package fleet
