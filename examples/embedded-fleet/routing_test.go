package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/httperr"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
	"github.com/cellb/cellb/drivers/wasm"
)

// Tally is a class whose handlers know nothing of routing: they make typed
// calls (cell.Call) with the request's context, and never call Setup.Route.
type Tally struct{ st *cell.State }

func (t *Tally) Add(ctx context.Context, n int64) (int64, error) {
	var v int64
	if _, err := t.st.KV().GetInto(ctx, "v", &v); err != nil {
		return 0, err
	}
	v += n
	return v, t.st.KV().Put(ctx, "v", v)
}

// ServeHTTP answers a Fetch: POST adds one, anything else reads.
func (t *Tally) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int64(0)
	if r.Method == "POST" {
		n = 1
	}
	v, err := t.Add(r.Context(), n)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	fmt.Fprintf(w, "%d %s", v, r.URL.RequestURI())
}

type tallyApp struct {
	ns   *cell.Namespace[*Tally]
	node string
}

// registerTally registers Tally and its routes:
//
//	POST /tally/{name}        +1 with a typed call
//	GET  /tally/{name}        the value
//	POST /pair/{first}/{then} +1 on first, then +1 on then (two typed calls)
func registerTally(s *host.Setup) (*tallyApp, error) {
	ns, err := cell.Register(s.Runtime, "Tally", func(ctx context.Context, st *cell.State) (*Tally, error) { return &Tally{st: st}, nil })
	if err != nil {
		return nil, err
	}
	a := &tallyApp{ns: ns, node: s.Node}
	add := func(r *http.Request, name string, n int64) (int64, error) {
		return cell.Call(r.Context(), ns.Get(ns.IDFromName(name)), func(ctx context.Context, t *Tally) (int64, error) {
			return t.Add(ctx, n)
		})
	}
	answer := func(w http.ResponseWriter, v int64, err error) {
		if err != nil {
			httperr.Write(w, err)
			return
		}
		w.Header().Set("X-Cellb-Node", a.node)
		json.NewEncoder(w).Encode(map[string]int64{"value": v})
	}
	s.Mux.HandleFunc("POST /tally/{name}", func(w http.ResponseWriter, r *http.Request) {
		v, err := add(r, r.PathValue("name"), 1)
		answer(w, v, err)
	})
	s.Mux.HandleFunc("GET /tally/{name}", func(w http.ResponseWriter, r *http.Request) {
		v, err := add(r, r.PathValue("name"), 0)
		answer(w, v, err)
	})
	s.Mux.HandleFunc("POST /pair/{first}/{then}", func(w http.ResponseWriter, r *http.Request) {
		if _, err := add(r, r.PathValue("first"), 1); err != nil {
			answer(w, 0, err)
			return
		}
		v, err := add(r, r.PathValue("then"), 1)
		answer(w, v, err)
	})
	return a, nil
}

type tallyNode struct {
	h   *host.Host
	app *tallyApp
	url string
}

// startTallyNode starts a node serving Tally: a fleet node on bucket, or
// (bucket nil) a single-host process on dataDir.
func startTallyNode(t testing.TB, bucket store.Store, dataDir string, more ...func(*host.Setup) error) *tallyNode {
	t.Helper()
	ctx := context.Background()
	public, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &tallyNode{url: "http://" + public.Addr().String()}
	cfg := host.Config{
		Driver:    wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous=OFF")),
		DataDir:   dataDir,
		Ownership: host.SingleHost,
		Listener:  public,
		Classes: func(s *host.Setup) (err error) {
			if n.app, err = registerTally(s); err != nil {
				return err
			}
			for _, f := range more {
				if err := f(s); err != nil {
					return err
				}
			}
			return nil
		},
	}
	if bucket != nil {
		peers, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Bucket, cfg.Mode, cfg.Ownership = bucket, ltxlog.Mode(), host.Fleet
		cfg.Fleet = host.FleetConfig{PeerListener: peers}
	}
	if n.h, err = host.New(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.h.Close(ctx) })
	return n
}

// hammer has 24 clients add one to random cells through random nodes, and
// checks that every answer is 200 and every cell's count is exact through
// every node.
func hammer(t *testing.T, nodes []*tallyNode) {
	const clients, rounds, cells = 24, 8, 10
	var mu sync.Mutex
	sent := map[string]int64{}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(c), 7))
			for range rounds {
				name := fmt.Sprintf("t%d", rnd.IntN(cells))
				url := nodes[rnd.IntN(len(nodes))].url + "/tally/" + name
				if a := do(t, "POST", url); a.status != 200 {
					t.Errorf("POST %s: %d %q", url, a.status, a.body)
					continue
				}
				mu.Lock()
				sent[name]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for name, want := range sent {
		owner := ""
		for _, n := range nodes {
			a := do(t, "GET", n.url+"/tally/"+name)
			if a.status != 200 || a.value != want {
				t.Fatalf("GET %s through %s: %d %q value %d, want 200 value %d", name, n.url, a.status, a.body, a.value, want)
			}
			if owner != "" && a.node != owner {
				t.Fatalf("%s answered by %s and by %s", name, owner, a.node)
			}
			owner = a.node
		}
	}
}

// shortDir is a data directory whose socket paths fit a unix socket's
// limit (t.TempDir's may not, with a long test name).
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestFleetRoutesEveryClass: a class registered without Setup.Route, whose
// handlers make only typed calls, is served by any of three fleet nodes
// for any cell: no call is refused, lost or run twice.
func TestFleetRoutesEveryClass(t *testing.T) {
	bucket, dir := memstore.New(), t.TempDir()
	var nodes []*tallyNode
	for range 3 {
		nodes = append(nodes, startTallyNode(t, bucket, dir))
	}
	hammer(t, nodes)
}

// TestSingleHostRoutesEveryClass: the same with two processes (two Hosts)
// sharing one data directory: the process holding a cell's shard answers.
func TestSingleHostRoutesEveryClass(t *testing.T) {
	dir := shortDir(t)
	hammer(t, []*tallyNode{startTallyNode(t, nil, dir), startTallyNode(t, nil, dir)})
}

// TestFetchWithoutARequestReachesTheOwner: Stub.Fetch called from a
// goroutine that serves no request, on a node that does not own the cell,
// is answered by the owner (fleet and single host).
func TestFetchWithoutARequestReachesTheOwner(t *testing.T) {
	for _, fleet := range []bool{true, false} {
		t.Run(map[bool]string{true: "fleet", false: "single host"}[fleet], func(t *testing.T) {
			var bucket store.Store
			if fleet {
				bucket = memstore.New()
			}
			dir := shortDir(t)
			a, b := startTallyNode(t, bucket, dir), startTallyNode(t, bucket, dir)
			// a takes the cell.
			if r := do(t, "POST", a.url+"/tally/f"); r.status != 200 || r.value != 1 {
				t.Fatalf("%+v", r)
			}
			stub := b.app.ns.Get(b.app.ns.IDFromName("f"))
			// b does not own it: a typed call outside a request is refused.
			_, err := host.Call(context.Background(), stub, func(ctx context.Context, t *Tally) (int64, error) { return t.Add(ctx, 0) })
			var nr *host.NotRoutedError
			var oe *lease.CellOwnedElsewhereError
			if !errors.As(err, &nr) || !errors.As(err, &oe) {
				t.Fatalf("typed call on b: %T %v, want *host.NotRoutedError", err, err)
			}
			done := make(chan string)
			go func() {
				req, _ := http.NewRequest("POST", "http://cell/add/a%2Fb?x=1", strings.NewReader("ignored"))
				resp, err := stub.Fetch(context.Background(), req)
				if err != nil {
					done <- "error: " + err.Error()
					return
				}
				body, _ := io.ReadAll(resp.Body)
				done <- fmt.Sprintf("%d %s", resp.StatusCode, body)
			}()
			if got := <-done; got != "200 2 /add/a%2Fb?x=1" {
				t.Fatalf("Fetch on b: %q, want 200 2 /add/a%%2Fb?x=1", got)
			}
			if r := do(t, "GET", a.url+"/tally/f"); r.status != 200 || r.value != 2 || r.node != a.h.Node() {
				t.Fatalf("after the Fetch, a answers %+v", r)
			}
		})
	}
}

// TestSecondCellOwnedElsewhereIs409: a handler whose first typed call ran
// here and whose second is for a cell another node owns is answered 409
// saying why; the request is not sent to the owner (the first call would
// run twice).
func TestSecondCellOwnedElsewhereIs409(t *testing.T) {
	bucket, dir := memstore.New(), t.TempDir()
	a, b := startTallyNode(t, bucket, dir), startTallyNode(t, bucket, dir)
	if r := do(t, "POST", b.url+"/tally/theirs"); r.status != 200 || r.value != 1 {
		t.Fatalf("%+v", r)
	}
	r := do(t, "POST", a.url+"/pair/mine/theirs")
	if r.status != 409 || !strings.Contains(r.body, "is owned by another node") ||
		!strings.Contains(r.body, "not routed: another cell call of this request already ran (or is running) here") {
		t.Fatalf("pair: %d %q, want 409 saying why it was not routed", r.status, r.body)
	}
	if r := do(t, "GET", a.url+"/tally/mine"); r.status != 200 || r.value != 1 || r.node != a.h.Node() {
		t.Fatalf("mine: %+v, want 1 on %s", r, a.h.Node())
	}
	if r := do(t, "GET", a.url+"/tally/theirs"); r.status != 200 || r.value != 1 || r.node != b.h.Node() {
		t.Fatalf("theirs: %+v, want 1 on %s", r, b.h.Node())
	}
	// The other way round, the first call is refused at a, so the whole
	// request goes to b; b runs it, and there the second call (a's cell)
	// is refused the same way, answered 409 without "not applied": a
	// sends it nowhere else.
	r = do(t, "POST", a.url+"/pair/theirs/mine")
	if r.status != 409 || !strings.Contains(r.body, "not routed: another cell call of this request already ran") {
		t.Fatalf("reverse pair: %d %q", r.status, r.body)
	}
	if r := do(t, "GET", a.url+"/tally/theirs"); r.status != 200 || r.value != 2 {
		t.Fatalf("theirs after the reverse pair: %+v, want 2", r)
	}
	if r := do(t, "GET", b.url+"/tally/mine"); r.status != 200 || r.value != 1 {
		t.Fatalf("mine after the reverse pair: %+v, want 1", r)
	}
}

// relay is an object that, asked with op=via, Fetches another relay (op=wait,
// which blocks until release is closed).
type relay struct {
	ns               *cell.Namespace[*relay]
	waiting, release chan struct{}
}

func (o *relay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Query().Get("op") {
	case "ping":
		io.WriteString(w, "pong")
	case "wait":
		o.waiting <- struct{}{}
		<-o.release
		io.WriteString(w, "waited")
	case "via":
		req, _ := http.NewRequestWithContext(r.Context(), "GET", "/x?op=wait", nil)
		resp, err := o.ns.Get(o.ns.IDFromName(r.URL.Query().Get("to"))).Fetch(r.Context(), req)
		if err != nil {
			httperr.Write(w, err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		io.WriteString(w, "via "+string(b))
	}
}

// TestRoutedFetchYieldsTheCallersTurn: an object whose handler Fetches a
// cell on another node does not hold its own gate meanwhile (as for a call
// here): another call to it is answered before the routed Fetch returns.
func TestRoutedFetchYieldsTheCallersTurn(t *testing.T) {
	waiting, release := make(chan struct{}), make(chan struct{})
	reg := func(s *host.Setup) error {
		o := &relay{waiting: waiting, release: release}
		ns, err := cell.Register(s.Runtime, "Relay", func(context.Context, *cell.State) (*relay, error) { return o, nil })
		o.ns = ns
		s.Mux.HandleFunc("/relay/{name}", func(w http.ResponseWriter, r *http.Request) {
			ns.Get(ns.IDFromName(r.PathValue("name"))).ServeHTTP(w, r)
		})
		return err
	}
	bucket, dir := memstore.New(), t.TempDir()
	a, b := startTallyNode(t, bucket, dir, reg), startTallyNode(t, bucket, dir, reg)
	get := func(url string) string {
		resp, err := http.Get(url)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, body)
	}
	if got := get(b.url + "/relay/B?op=ping"); got != "200 pong" { // b takes B
		t.Fatal(got)
	}
	if got := get(a.url + "/relay/A?op=ping"); got != "200 pong" { // a takes A
		t.Fatal(got)
	}
	via := make(chan string)
	go func() { via <- get(a.url + "/relay/A?op=via&to=B") }()
	<-waiting // A's Fetch reached B, on b, and waits there
	if got := get(a.url + "/relay/A?op=ping"); got != "200 pong" {
		t.Fatalf("A while its Fetch to B is out: %q", got)
	}
	close(release)
	if got := <-via; got != "200 via waited" {
		t.Fatalf("via: %q", got)
	}
}

// moveRoute registers POST /move/{from}/{to}: -1 on from with a typed call,
// then +1 on to with Stub.Fetch, answered {"delivered":…} (whether the
// Fetch reached to's owner) and the Fetch's answer.
func moveRoute(s *host.Setup) error {
	ns, err := s.Runtime.Namespace("Tally")
	if err != nil {
		return err
	}
	s.Mux.HandleFunc("POST /move/{from}/{to}", func(w http.ResponseWriter, r *http.Request) {
		from := ns.Get(ns.IDFromName(r.PathValue("from")))
		if _, err := cell.Call(r.Context(), from, func(ctx context.Context, t any) (int64, error) { return t.(*Tally).Add(ctx, -1) }); err != nil {
			httperr.Write(w, err)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), "POST", "/credit", nil)
		resp, err := ns.Get(ns.IDFromName(r.PathValue("to"))).Fetch(r.Context(), req)
		out := map[string]any{"delivered": err == nil}
		if err != nil {
			out["error"] = err.Error()
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out["answer"] = string(b)
		}
		json.NewEncoder(w).Encode(out)
	})
	return nil
}

// TestDebitAndCreditOnANodeOwningNeither: a request that debits one cell
// with a typed call and credits another with Stub.Fetch, sent to the node
// that owns neither, is delivered: the request goes whole to the debited
// cell's owner, and there the Fetch goes alone to the credited cell's.
func TestDebitAndCreditOnANodeOwningNeither(t *testing.T) {
	bucket, dir := memstore.New(), t.TempDir()
	a, b, c := startTallyNode(t, bucket, dir, moveRoute), startTallyNode(t, bucket, dir, moveRoute), startTallyNode(t, bucket, dir, moveRoute)
	if r := do(t, "POST", a.url+"/tally/from"); r.status != 200 || r.node != a.h.Node() {
		t.Fatalf("%+v", r)
	}
	if r := do(t, "POST", b.url+"/tally/to"); r.status != 200 || r.node != b.h.Node() {
		t.Fatalf("%+v", r)
	}
	resp, err := http.Post(c.url+"/move/from/to", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got struct {
		Delivered bool
		Answer    string
		Error     string
	}
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 200 || !got.Delivered || got.Answer != "2 /credit" {
		t.Fatalf("move through the node owning neither: %d %s", resp.StatusCode, body)
	}
	if r := do(t, "GET", c.url+"/tally/from"); r.status != 200 || r.value != 0 {
		t.Fatalf("from: %+v, want 0", r)
	}
	if r := do(t, "GET", c.url+"/tally/to"); r.status != 200 || r.value != 2 {
		t.Fatalf("to: %+v, want 2", r)
	}
}
