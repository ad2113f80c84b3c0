package cell

import (
	"context"
	"testing"
)

// AllowUnconfirmed marks a context for the instance whose event it
// carries, and for no other: a callee's handler context, derived from the
// caller's, stays gated.
func TestAllowUnconfirmedNamesItsInstance(t *testing.T) {
	bg := context.Background()
	if got := AllowUnconfirmed(bg); got != bg {
		t.Fatal("outside a handler AllowUnconfirmed changed the context")
	}
	a, b := &instance{}, &instance{}
	ctxA := AllowUnconfirmed(context.WithValue(bg, eventKey{}, &event{inst: a}))
	if !unconfirmed(ctxA, a) {
		t.Fatal("the mark does not apply to the caller")
	}
	callee := context.WithValue(ctxA, eventKey{}, &event{inst: b})
	if unconfirmed(callee, b) {
		t.Fatal("the caller's mark applies to the callee")
	}
	if unconfirmed(context.WithValue(bg, eventKey{}, &event{inst: a}), a) {
		t.Fatal("an unmarked context is unconfirmed")
	}
}
