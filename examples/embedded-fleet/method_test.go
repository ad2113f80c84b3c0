package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/httperr"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// tallyMethods are typed methods of Tally, registered on every node.
// They are registered on the untyped namespace (Runtime.Namespace), as
// code that knows a class only by name would.
type tallyMethods struct {
	ns   *cell.Namespace[any]
	add  *cell.Method[any, int64, int64]
	fail *cell.Method[any, string, int64]
	boom *cell.Method[any, int64, int64]
	big  *cell.Method[any, int, string]
	// extra is registered only where withExtra is set.
	extra *cell.Method[any, int64, int64]
}

// stub is the Tally named name.
func (m *tallyMethods) stub(name string) *cell.Stub[any] { return m.ns.Get(m.ns.IDFromName(name)) }

// registerTallyMethods registers Tally's methods (the class must be
// registered) and POST /credit/{from}/{to}: -1 on from with a typed call,
// then +1 on to with a method call.
func registerTallyMethods(m *tallyMethods, withExtra bool) func(*host.Setup) error {
	return func(s *host.Setup) (err error) {
		ns, err := s.Runtime.Namespace("Tally")
		if err != nil {
			return err
		}
		m.ns = ns
		if m.add, err = cell.RegisterMethod(ns, "add", func(ctx context.Context, o any, n int64) (int64, error) { return o.(*Tally).Add(ctx, n) }); err != nil {
			return err
		}
		if m.fail, err = cell.RegisterMethod(ns, "fail", func(ctx context.Context, o any, msg string) (int64, error) {
			if _, err := o.(*Tally).Add(ctx, 1); err != nil { // committed: an error is a reply
				return 0, err
			}
			return 0, errors.New(msg)
		}); err != nil {
			return err
		}
		if m.boom, err = cell.RegisterMethod(ns, "boom", func(ctx context.Context, o any, n int64) (int64, error) { panic("boom") }); err != nil {
			return err
		}
		if m.big, err = cell.RegisterMethod(ns, "big", func(ctx context.Context, o any, n int) (string, error) { return strings.Repeat("x", n), nil }); err != nil {
			return err
		}
		if withExtra {
			if m.extra, err = cell.RegisterMethod(ns, "extra", func(ctx context.Context, o any, n int64) (int64, error) { return o.(*Tally).Add(ctx, n) }); err != nil {
				return err
			}
		}
		s.Mux.HandleFunc("POST /credit/{from}/{to}", func(w http.ResponseWriter, r *http.Request) {
			from := ns.Get(ns.IDFromName(r.PathValue("from")))
			if _, err := cell.Call(r.Context(), from, func(ctx context.Context, o any) (int64, error) { return o.(*Tally).Add(ctx, -1) }); err != nil {
				httperr.Write(w, err)
				return
			}
			v, err := m.add.Call(r.Context(), ns.Get(ns.IDFromName(r.PathValue("to"))), 1)
			if err != nil {
				httperr.Write(w, err)
				return
			}
			json.NewEncoder(w).Encode(map[string]int64{"value": v})
		})
		return nil
	}
}

func methodNodes(t testing.TB, fleet bool, n int) ([]*tallyNode, []*tallyMethods) {
	t.Helper()
	var bucket store.Store
	if fleet {
		bucket = memstore.New()
	}
	dir := shortDir(t)
	var nodes []*tallyNode
	var ms []*tallyMethods
	for i := range n {
		m := &tallyMethods{}
		nodes = append(nodes, startTallyNode(t, bucket, dir, registerTallyMethods(m, i == 0)))
		ms = append(ms, m)
	}
	return nodes, ms
}

// TestMethodCallReachesOwner: a typed method call made on a node that does
// not own the cell — from a goroutine serving no request — is run by the
// owner, and its reply comes back (fleet, and two single-host processes).
func TestMethodCallReachesOwner(t *testing.T) {
	for _, fleet := range []bool{true, false} {
		t.Run(map[bool]string{true: "fleet", false: "single host"}[fleet], func(t *testing.T) {
			nodes, ms := methodNodes(t, fleet, 2)
			a, b := nodes[0], nodes[1]
			if r := do(t, "POST", a.url+"/tally/m"); r.status != 200 || r.node != a.h.Node() {
				t.Fatalf("%+v", r)
			}
			stub := ms[1].stub("m")
			done := make(chan error)
			var v int64
			go func() {
				var err error
				v, err = ms[1].add.Call(context.Background(), stub, 5)
				done <- err
			}()
			if err := <-done; err != nil || v != 6 {
				t.Fatalf("add on b: %d %v, want 6", v, err)
			}
			var untyped int64
			if err := stub.CallMethod(context.Background(), "add", 4, &untyped); err != nil || untyped != 10 {
				t.Fatalf("CallMethod on b: %d %v, want 10", untyped, err)
			}
			if r := do(t, "GET", b.url+"/tally/m"); r.status != 200 || r.value != 10 || r.node != a.h.Node() {
				t.Fatalf("after the calls: %+v, want 10 on %s", r, a.h.Node())
			}
		})
	}
}

// TestMethodErrorsKeepTheirType: the errors of a method call answered by
// another node come back as the runtime's types: the method's own error
// (its writes committed), a reset, payloads over the limit (an argument
// refused before it is sent, a reply after the method ran), a method the
// owner does not have; and the same types when the call runs here.
func TestMethodErrorsKeepTheirType(t *testing.T) {
	nodes, ms := methodNodes(t, true, 2)
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	if r := do(t, "POST", b.url+"/tally/e"); r.status != 200 || r.node != b.h.Node() {
		t.Fatalf("%+v", r)
	}
	// Before any reset below (a reset may let the cell move to a).
	if _, err := ms[0].extra.Call(ctx, ms[0].stub("e"), 1); !errors.Is(err, cell.ErrUnknownMethod) || !strings.Contains(err.Error(), b.h.Node()) {
		t.Errorf("a method the owner lacks: %T %v", err, err)
	}
	for _, at := range []*tallyNode{a, b} { // a sends to b; b runs here
		where := "remote"
		m := ms[0]
		if at == b {
			where, m = "local", ms[1]
		}
		stub := m.stub("e")
		before := do(t, "GET", b.url+"/tally/e").value
		var me *cell.MethodError
		if _, err := m.fail.Call(ctx, stub, "insufficient funds"); !errors.As(err, &me) || me.Message != "insufficient funds" || me.Method != "fail" || me.Class != "Tally" {
			t.Errorf("%s fail: %T %v", where, err, err)
		}
		if r := do(t, "GET", b.url+"/tally/e"); r.value != before+1 {
			t.Errorf("%s fail: the method's write before its error: %d, want %d", where, r.value, before+1)
		}
		var be *cell.BrokenObjectError
		if _, err := m.boom.Call(ctx, stub, 1); !errors.As(err, &be) || !strings.Contains(be.Reason, "panicked: boom") || be.Key != stub.Key() {
			t.Errorf("%s boom: %T %v", where, err, err)
		}
		var big *cell.PayloadTooLargeError
		if _, err := m.big.Call(ctx, stub, cell.MaxMethodPayload); !errors.As(err, &big) || big.What != "reply" || big.Limit != cell.MaxMethodPayload {
			t.Errorf("%s big reply: %T %v", where, err, err)
		}
		if _, err := m.add.Call(ctx, stub, 0); err != nil {
			t.Errorf("%s after the errors: %v", where, err)
		}
	}
	stub := ms[0].stub("e")
	var big *cell.PayloadTooLargeError
	if err := stub.CallMethod(ctx, "big", strings.Repeat("y", cell.MaxMethodPayload), nil); !errors.As(err, &big) || big.What != "argument" {
		t.Errorf("big argument: %T %v", err, err)
	}
	if err := stub.CallMethod(ctx, "nope", 1, nil); !errors.Is(err, cell.ErrUnknownMethod) {
		t.Errorf("a method nobody registered: %T %v", err, err)
	}
}

// TestMethodCallInsideForwardedRequest: a request that debits one cell
// with a typed call and credits another with a method call, sent to the
// node that owns neither, goes whole to the debited cell's owner, and
// there the method call goes alone to the credited cell's owner.
func TestMethodCallInsideForwardedRequest(t *testing.T) {
	nodes, _ := methodNodes(t, true, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	if r := do(t, "POST", a.url+"/tally/from"); r.status != 200 || r.node != a.h.Node() {
		t.Fatalf("%+v", r)
	}
	if r := do(t, "POST", b.url+"/tally/to"); r.status != 200 || r.node != b.h.Node() {
		t.Fatalf("%+v", r)
	}
	if r := do(t, "POST", c.url+"/credit/from/to"); r.status != 200 || r.value != 2 {
		t.Fatalf("credit through the node owning neither: %+v", r)
	}
	if r := do(t, "GET", c.url+"/tally/from"); r.value != 0 || r.node != a.h.Node() {
		t.Fatalf("from: %+v", r)
	}
	if r := do(t, "GET", c.url+"/tally/to"); r.value != 2 || r.node != b.h.Node() {
		t.Fatalf("to: %+v", r)
	}
}

// Pinger's alarm adds one to a Tally with a method call.
type Pinger struct {
	st     *cell.State
	add    *cell.Method[any, int64, int64]
	target *cell.Stub[any]
	got    chan string
}

func (p *Pinger) Alarm(ctx context.Context, _ cell.AlarmInfo) error {
	v, err := p.add.Call(ctx, p.target, 1)
	if err != nil {
		p.got <- "error: " + err.Error()
		return nil
	}
	p.got <- fmt.Sprint(v)
	return nil
}

// TestMethodCallFromAlarm: an alarm handler's method call for a cell
// another node owns reaches that owner.
func TestMethodCallFromAlarm(t *testing.T) {
	got := make(chan string, 1)
	var ms []*tallyMethods
	pingers := func(m *tallyMethods) func(*host.Setup) error {
		return func(s *host.Setup) error {
			png, err := cell.Register(s.Runtime, "Pinger", func(ctx context.Context, st *cell.State) (*Pinger, error) {
				return &Pinger{st: st, add: m.add, target: m.stub("pinged"), got: got}, nil
			})
			s.Mux.HandleFunc("POST /ping/{name}", func(w http.ResponseWriter, r *http.Request) {
				_, err := cell.Call(r.Context(), png.Get(png.IDFromName(r.PathValue("name"))), func(ctx context.Context, p *Pinger) (int, error) {
					return 0, p.st.SetAlarm(ctx, time.Now())
				})
				if err != nil {
					httperr.Write(w, err)
					return
				}
				io.WriteString(w, `{"value":0}`)
			})
			return err
		}
	}
	bucket, dir := memstore.New(), t.TempDir()
	var nodes []*tallyNode
	for range 2 {
		m := &tallyMethods{}
		ms = append(ms, m)
		nodes = append(nodes, startTallyNode(t, bucket, dir, registerTallyMethods(m, false), pingers(m)))
	}
	a, b := nodes[0], nodes[1]
	if r := do(t, "POST", b.url+"/tally/pinged"); r.status != 200 || r.node != b.h.Node() {
		t.Fatalf("%+v", r)
	}
	if r := do(t, "POST", a.url+"/ping/p"); r.status != 200 {
		t.Fatalf("ping: %+v", r)
	}
	if v := <-got; v != "2" {
		t.Fatalf("the alarm's call: %s, want 2", v)
	}
	if r := do(t, "GET", a.url+"/tally/pinged"); r.value != 2 || r.node != b.h.Node() {
		t.Fatalf("pinged: %+v", r)
	}
}
