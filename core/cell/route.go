package cell

import (
	"context"
	"net/http"
)

// Router is the runtime's routing port (Options.Router): every Call and
// Stub.Fetch goes through it, so a call whose cell another node or process
// owns can reach that owner. here runs the call on this runtime and
// returns what it returned, a *lease.CellOwnedElsewhereError among it; the
// router runs it (again, while the owner provably did not run the call
// and the cell may come free) or sends the call to the owner instead.
//
// A nil Router runs every call here: a call for a cell owned elsewhere
// fails with the lease's *lease.CellOwnedElsewhereError. core/host
// supplies the Router of a node it builds.
type Router interface {
	// Call runs a typed call (cell.Call) on the object class/id. A typed
	// call is a Go function: it cannot be sent anywhere, so a router can
	// only forward the HTTP request it was made for, if any, whole.
	Call(ctx context.Context, class string, id ID, here func() error) error
	// Fetch delivers req to the object class/id (Stub.Fetch). here runs it
	// on this runtime with the request it is given (req, or a copy with
	// the body already read). The router may send req to the owner
	// instead and return the owner's answer.
	Fetch(ctx context.Context, class string, id ID, req *http.Request, here func(*http.Request) (*http.Response, error)) (*http.Response, error)
}
