package storetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cellb/cellb/core/store"
)

// returnGuard is how long a call with an ended context may take before the
// case calls it stuck. It guards against hangs; it does not measure speed.
const returnGuard = 30 * time.Second

func testContextCancel(t tb, e *env) {
	existing := e.key("existing")
	bExisting := e.body("existing")
	vExisting := mustPut(t, e.ctx, e.s, existing, bExisting, store.PutOptions{})

	cancelled, cancel := context.WithCancel(e.ctx)
	cancel()
	expired, cancel2 := context.WithDeadline(e.ctx, time.Unix(1, 0))
	defer cancel2()

	for _, c := range []struct {
		name string
		ctx  context.Context
		want error
	}{{"cancelled", cancelled, context.Canceled}, {"expired", expired, context.DeadlineExceeded}} {
		calls := []struct {
			op string
			do func() error
		}{
			{"get", func() error { _, err := e.s.Get(c.ctx, existing); return err }},
			{"put", func() error {
				_, err := e.s.Put(c.ctx, e.key("new-"+c.name), e.body("new"), store.PutOptions{})
				return err
			}},
			{"replace", func() error {
				_, err := e.s.Put(c.ctx, existing, e.body("replace"), store.PutOptions{Condition: store.IfVersion(vExisting)})
				return err
			}},
			{"delete", func() error { return e.s.Delete(c.ctx, existing) }},
			{"list", func() error { _, err := e.s.List(c.ctx, store.ListOptions{Prefix: e.prefix}); return err }},
		}
		for _, call := range calls {
			done := make(chan error, 1)
			go func() {
				defer func() {
					if p := recover(); p != nil {
						done <- panicError{p}
					}
				}()
				done <- call.do()
			}()
			guard := time.NewTimer(returnGuard)
			select {
			case err := <-done:
				if !errors.Is(err, c.want) {
					t.Errorf("%s with a %s context: %v, want an error matching %v", call.op, c.name, err, c.want)
				}
			case <-guard.C:
				t.Errorf("%s with a %s context had not returned after %v", call.op, c.name, returnGuard)
			}
			guard.Stop()
		}
		if _, err := e.s.Get(e.ctx, e.key("new-"+c.name)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a put with a %s context was applied (get: %v)", c.name, err)
		}
	}
	checkBody(t, "the object the calls with ended contexts tried to change", mustGet(t, e.ctx, e.s, existing), bExisting, vExisting)
}

type panicError struct{ v any }

func (p panicError) Error() string { return fmt.Sprintf("panic: %v", p.v) }
