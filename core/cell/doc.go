// Package cell is CellB's runtime: it hosts cells (Durable-Object-style
// objects, each with its own SQLite database) and gives each one the
// guarantees described in docs/runtime.md.
//
// A user registers a class with Register and calls objects through stubs:
// Stub.Fetch for http.Handler objects, Call for a Go function run on the
// object, and the named methods registered with RegisterMethod
// (Method.Call, Stub.CallMethod), whose encoded argument a router can send
// to the node that owns the cell. Every
// call is an event that waits its turn at the object's input gate. The
// first storage call of a turn opens an implicit transaction that commits
// when the turn ends; the reply then waits behind the output gate until
// every commit made before it is durable.
//
// A turn ends when the handler returns or yields: Await runs blocking work
// outside the gate, and a stub call made from inside a handler yields that
// handler for the duration of the call. BlockConcurrencyWhile keeps the
// gate across yields. What a yield sends out (Await's function, a stub
// call, a chunk of a streamed response) waits behind the output gate too,
// unless its context carries AllowUnconfirmed.
//
// Storage is reached through the State handed to the class's constructor:
// SQL (State.SQL), key-value pairs over celld's _cf_KV table (State.KV) and
// the alarm in celld's _cf_ALARM table (State.SetAlarm and friends). Every
// storage method takes the context the handler received; that context is how
// the runtime knows the call belongs to the turn holding the gate.
package cell
