package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cellb/cellb/conformance/celltest"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/drivers/wasm"
	"github.com/cellb/cellb/examples/chatroom"
)

// wsRuntime is an in-process runtime on a log the test controls, with
// objects evicted after idle (so they hibernate), served over HTTP.
type wsRuntime struct {
	rt  *cell.Runtime
	log *celltest.ControlLog
	mux *http.ServeMux
	srv *httptest.Server
}

func newWSRuntime(t *testing.T, idle time.Duration) *wsRuntime {
	t.Helper()
	log := celltest.NewControlLog()
	rt, err := cell.New(cell.Options{
		ScriptName: "ws", Driver: wasm.New(), DataDir: t.TempDir(), Log: log,
		Logger: quietLogger(), IdleTimeout: idle, AlarmResidency: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	w := &wsRuntime{rt: rt, log: log, mux: http.NewServeMux()}
	w.srv = httptest.NewServer(w.mux)
	t.Cleanup(func() {
		log.Stop()
		rt.Close(context.Background())
		w.srv.Close()
	})
	return w
}

func (w *wsRuntime) dial(t *testing.T, path string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(w.srv.URL, "http")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// waitFor polls cond (every wait here is bounded: running out fails).
func wsWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readText(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

// TestWebSocketChatRoomOrderAndHibernation: 20 sockets in one room, each
// sending 5 messages at once, all receive the 100 posts in one order (id
// order); the room then hibernates (evicted, sockets open), and the next
// message, over a socket and over a post, reaches all again.
func TestWebSocketChatRoomOrderAndHibernation(t *testing.T) {
	w := newWSRuntime(t, 100*time.Millisecond)
	app, err := chatroom.Register(w.rt, chatroom.Options{})
	if err != nil {
		t.Fatal(err)
	}
	app.Routes(w.mux)
	const sockets, each = 20, 5
	conns := make([]*websocket.Conn, sockets)
	for i := range conns {
		conns[i] = w.dial(t, "/room/lobby/ws")
	}
	wsWait(t, "20 accepted sockets", func() bool { return w.rt.OpenWebSockets() == sockets })
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				if err := c.Write(context.Background(), websocket.MessageText, []byte(fmt.Sprintf("s%d-m%d", i, j))); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	orders := make([][]string, sockets)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(0)
			for range sockets * each {
				var m chatroom.Message
				s := readText(t, c)
				if err := json.Unmarshal([]byte(s), &m); err != nil {
					t.Errorf("socket %d: %q: %v", i, s, err)
					return
				}
				if m.ID <= last {
					t.Errorf("socket %d: id %d after %d: not in id order", i, m.ID, last)
				}
				last = m.ID
				orders[i] = append(orders[i], m.Text)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i := range orders {
		if strings.Join(orders[i], ",") != strings.Join(orders[0], ",") {
			t.Fatalf("socket %d got another order than socket 0", i)
		}
	}
	// Hibernation: the room leaves memory, its sockets stay.
	key := app.NS.Key(app.NS.IDFromName("lobby"))
	wsWait(t, "the room to hibernate", func() bool { return len(w.rt.ActiveCells()) == 0 })
	if n := w.rt.OpenWebSockets(); n != sockets {
		t.Fatalf("%d sockets open after hibernation, want %d", n, sockets)
	}
	if err := conns[3].Write(context.Background(), websocket.MessageText, []byte("after")); err != nil {
		t.Fatal(err)
	}
	for i, c := range conns {
		var m chatroom.Message
		if err := json.Unmarshal([]byte(readText(t, c)), &m); err != nil || m.Text != "after" {
			t.Fatalf("socket %d after hibernation: %+v %v", i, m, err)
		}
	}
	if got := w.rt.ActiveCells(); len(got) != 1 || got[0] != key {
		t.Fatalf("active cells %v, want the room woken", got)
	}
	// A post (as POST /room does) is broadcast too.
	if _, err := cell.Call(context.Background(), app.NS.Get(app.NS.IDFromName("lobby")), func(ctx context.Context, r *chatroom.Room) (int64, error) {
		id, _, err := r.Post(ctx, "posted", time.Minute)
		return id, err
	}); err != nil {
		t.Fatal(err)
	}
	for i, c := range conns {
		var m chatroom.Message
		if err := json.Unmarshal([]byte(readText(t, c)), &m); err != nil || m.Text != "posted" {
			t.Fatalf("socket %d: %+v %v, want the posted message", i, m, err)
		}
	}
}

// echo is a test class: it records each message and answers its sender
// with the message, the socket's tag and attachment.
type echo struct {
	st     *cell.State
	events chan string
}

type echoClass struct {
	built  atomic.Int64
	events chan string
}

func (ec *echoClass) register(t *testing.T, w *wsRuntime) *cell.Namespace[*echo] {
	t.Helper()
	ns, err := cell.Register(w.rt, "Echo", func(ctx context.Context, st *cell.State) (*echo, error) {
		ec.built.Add(1)
		if _, err := st.SQL().Exec(ctx, "CREATE TABLE IF NOT EXISTS said(x TEXT)"); err != nil {
			return nil, err
		}
		return &echo{st: st, events: ec.events}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w.mux.HandleFunc("GET /echo/{name}", func(rw http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		err := cell.Upgrade(rw, r, ns.Get(ns.IDFromName(name)), func(ctx context.Context, o *echo, ws *cell.WebSocket) error {
			if err := o.st.AcceptWebSocket(ws, "tag-"+name); err != nil {
				return err
			}
			if err := ws.SerializeAttachment(map[string]string{"who": name}); err != nil {
				return err
			}
			return o.st.SetWebSocketAutoResponse("ping", "pong")
		})
		if err != nil && !errors.Is(err, cell.ErrUpgradeAnswered) {
			http.Error(rw, err.Error(), 500)
		}
	})
	return ns
}

func (e *echo) WebSocketMessage(ctx context.Context, ws *cell.WebSocket, data []byte, binary bool) error {
	if binary {
		return ws.SendText(ctx, fmt.Sprintf("%d bytes", len(data)))
	}
	if _, err := e.st.SQL().Exec(ctx, "INSERT INTO said(x) VALUES (?)", string(data)); err != nil {
		return err
	}
	var att map[string]string
	if _, err := ws.DeserializeAttachment(&att); err != nil {
		return err
	}
	if strings.HasPrefix(string(data), "unconfirmed:") {
		ctx = cell.AllowUnconfirmed(ctx) // the send does not wait for the write
	}
	return ws.SendText(ctx, fmt.Sprintf("%s|%s|%s", data, strings.Join(ws.Tags(), ","), att["who"]))
}

func (e *echo) WebSocketClose(ctx context.Context, ws *cell.WebSocket, code int, reason string, wasClean bool) error {
	e.events <- fmt.Sprintf("close %d %s %v", code, reason, wasClean)
	return nil
}

func (e *echo) WebSocketError(ctx context.Context, ws *cell.WebSocket, err error) error {
	var le *cell.WebSocketLimitError
	e.events <- fmt.Sprintf("error limit=%v", errors.As(err, &le))
	return nil
}

// TestWebSocketHibernationKeepsAttachmentAndAutoResponseDoesNotWake: a
// hibernated object is answered "pong" by the node without being built
// again; its next real message rebuilds it, and the socket's tags and
// attachment survived.
func TestWebSocketHibernationKeepsAttachmentAndAutoResponseDoesNotWake(t *testing.T) {
	w := newWSRuntime(t, 100*time.Millisecond)
	ec := &echoClass{events: make(chan string, 10)}
	ec.register(t, w)
	c := w.dial(t, "/echo/ann")
	ctx := context.Background()
	if err := c.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, c); got != "hi|tag-ann|ann" {
		t.Fatalf("echo %q", got)
	}
	wsWait(t, "hibernation", func() bool { return len(w.rt.ActiveCells()) == 0 })
	built := ec.built.Load()
	for range 3 {
		if err := c.Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
			t.Fatal(err)
		}
		if got := readText(t, c); got != "pong" {
			t.Fatalf("automatic response %q, want pong", got)
		}
	}
	if n := len(w.rt.ActiveCells()); n != 0 || ec.built.Load() != built {
		t.Fatalf("the automatic response woke the object: %d active, built %d times (was %d)", n, ec.built.Load(), built)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte("again")); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, c); got != "again|tag-ann|ann" {
		t.Fatalf("after hibernation: %q, want tags and attachment kept", got)
	}
	if ec.built.Load() != built+1 {
		t.Fatalf("built %d times, want the message to rebuild the object once", ec.built.Load()-built)
	}
	// The peer's Close reaches WebSocketClose with its code and reason.
	if err := c.Close(4000, "bye"); err != nil {
		t.Fatal(err)
	}
	if got := <-ec.events; got != "close 4000 bye true" {
		t.Fatalf("event %q", got)
	}
	wsWait(t, "the socket to leave the set", func() bool { return w.rt.OpenWebSockets() == 0 })
}

// TestWebSocketMessageTooBig: a message over 32 MiB closes the socket
// with 1009 and reaches WebSocketError as a *WebSocketLimitError.
func TestWebSocketMessageTooBig(t *testing.T) {
	w := newWSRuntime(t, -1)
	ec := &echoClass{events: make(chan string, 10)}
	ec.register(t, w)
	c := w.dial(t, "/echo/big")
	ctx := context.Background()
	if err := c.Write(ctx, websocket.MessageBinary, make([]byte, cell.MaxWebSocketMessage)); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, c); got != fmt.Sprintf("%d bytes", cell.MaxWebSocketMessage) {
		t.Fatalf("a message of exactly 32 MiB: %q", got)
	}
	_ = c.Write(ctx, websocket.MessageBinary, make([]byte, cell.MaxWebSocketMessage+1))
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, _, err := c.Read(rctx)
	if code := websocket.CloseStatus(err); code != websocket.StatusMessageTooBig {
		t.Fatalf("close %v (%v), want 1009", code, err)
	}
	if got := <-ec.events; got != "error limit=true" {
		t.Fatalf("event %q, want a limit error", got)
	}
}

// TestWebSocketSendWaitsForTheOutputGate: while the commit of the
// message's turn is held back, its answer does not leave; released, it
// does.
func TestWebSocketSendWaitsForTheOutputGate(t *testing.T) {
	w := newWSRuntime(t, -1)
	ec := &echoClass{events: make(chan string, 10)}
	ec.register(t, w)
	c := w.dial(t, "/echo/gate")
	wsWait(t, "the accepted socket", func() bool { return w.rt.OpenWebSockets() == 1 })
	if s := replyWhileHeld(t, w, c, "held", "the message's commit", "arrived before its commit was durable"); s != "held|tag-gate|gate" {
		t.Fatalf("after release: %q", s)
	}
}

// replyWhileHeld sends msg on c with the log's commits held, waits for the
// commit it makes, checks that no answer arrives while the commit is held
// (a pause long enough for a send that ignored the gate to show; it
// cannot fail a correct runtime), releases the log and returns the answer.
func replyWhileHeld(t *testing.T, w *wsRuntime, c *websocket.Conn, msg, commit, early string) string {
	t.Helper()
	w.log.Hold()
	before := w.log.Appended()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	wsWait(t, commit, func() bool { return w.log.Appended() > before })
	got := make(chan string, 1)
	go func() {
		_, b, _ := c.Read(context.Background())
		got <- string(b)
	}()
	select {
	case s := <-got:
		t.Fatalf("%q %s", s, early)
	case <-time.After(200 * time.Millisecond):
	}
	w.log.Release()
	return <-got
}

// TestWebSocketSendAllowUnconfirmed: a send made with cell.AllowUnconfirmed
// leaves while the commit before it is still held, as Durable Objects'
// allowUnconfirmed does.
func TestWebSocketSendAllowUnconfirmed(t *testing.T) {
	w := newWSRuntime(t, -1)
	ec := &echoClass{events: make(chan string, 10)}
	ec.register(t, w)
	c := w.dial(t, "/echo/gate")
	ctx := context.Background()
	wsWait(t, "the accepted socket", func() bool { return w.rt.OpenWebSockets() == 1 })
	w.log.Hold()
	defer w.log.Release()
	before := w.log.Appended()
	if err := c.Write(ctx, websocket.MessageText, []byte("unconfirmed:now")); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, b, err := c.Read(rctx)
	if err != nil || string(b) != "unconfirmed:now|tag-gate|gate" {
		t.Fatalf("while the commit is held: %q, %v", b, err)
	}
	// The write is committed all the same (and held by the log).
	wsWait(t, "the message's commit", func() bool { return w.log.Appended() > before })
}

// TestWebSocketSendDroppedOnFailedCommit: the commit behind an answer
// fails: the answer never leaves and the socket closes with 1011.
func TestWebSocketSendDroppedOnFailedCommit(t *testing.T) {
	w := newWSRuntime(t, -1)
	ec := &echoClass{events: make(chan string, 10)}
	ec.register(t, w)
	c := w.dial(t, "/echo/fail")
	ctx := context.Background()
	w.log.Hold()
	before := w.log.Appended()
	if err := c.Write(ctx, websocket.MessageText, []byte("doomed")); err != nil {
		t.Fatal(err)
	}
	wsWait(t, "the message's commit", func() bool { return w.log.Appended() > before })
	w.log.Fail(errors.New("the bucket said no"))
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, b, err := c.Read(rctx)
	if err == nil {
		t.Fatalf("%q was sent though its commit failed", b)
	}
	if code := websocket.CloseStatus(err); code != websocket.StatusInternalError {
		t.Fatalf("close %v (%v), want 1011", code, err)
	}
	w.log.Release()
	// The cell works again on a fresh instance, and a new socket too.
	c2 := w.dial(t, "/echo/fail")
	if err := c2.Write(ctx, websocket.MessageText, []byte("fresh")); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, c2); got != "fresh|tag-fail|fail" {
		t.Fatalf("after the reset: %q", got)
	}
}

// TestWebSocketRuntimeCloseIs1012: closing the runtime (the owner going
// away) closes its sockets with 1012.
func TestWebSocketRuntimeCloseIs1012(t *testing.T) {
	w := newWSRuntime(t, -1)
	ec := &echoClass{events: make(chan string, 10)}
	ec.register(t, w)
	c := w.dial(t, "/echo/bye")
	wsWait(t, "the socket", func() bool { return w.rt.OpenWebSockets() == 1 })
	go w.rt.Close(context.Background())
	rctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, _, err := c.Read(rctx)
	if code := websocket.CloseStatus(err); code != websocket.StatusServiceRestart {
		t.Fatalf("close %v (%v), want 1012", code, err)
	}
}

// caller is a test class whose socket handler calls another object (an
// echo) that writes, then tells the socket "called".
type caller struct {
	st     *cell.State
	target *cell.Namespace[*echo]
}

func (c *caller) WebSocketMessage(ctx context.Context, ws *cell.WebSocket, data []byte, binary bool) error {
	if _, err := cell.Call(ctx, c.target.Get(c.target.IDFromName("callee")), func(ctx context.Context, o *echo) (int64, error) {
		_, err := o.st.SQL().Exec(ctx, "INSERT INTO said(x) VALUES ('via call')")
		return 0, err
	}); err != nil {
		return err
	}
	return ws.SendText(ctx, "called")
}

// TestWebSocketHandlerCallWaitsForTheCallee: a call a socket handler makes
// to another object returns once the callee's write is durable, as any
// call's reply does (the socket event's own reply waits for nothing; that
// must not leak into the calls it makes).
func TestWebSocketHandlerCallWaitsForTheCallee(t *testing.T) {
	w := newWSRuntime(t, -1)
	target := (&echoClass{events: make(chan string, 10)}).register(t, w)
	ns, err := cell.Register(w.rt, "Caller", func(ctx context.Context, st *cell.State) (*caller, error) {
		return &caller{st: st, target: target}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w.mux.HandleFunc("GET /caller/{name}", func(rw http.ResponseWriter, r *http.Request) {
		err := cell.Upgrade(rw, r, ns.Get(ns.IDFromName(r.PathValue("name"))), func(ctx context.Context, o *caller, ws *cell.WebSocket) error {
			return o.st.AcceptWebSocket(ws)
		})
		if err != nil && !errors.Is(err, cell.ErrUpgradeAnswered) {
			http.Error(rw, err.Error(), 500)
		}
	})
	// Build the callee first, so the held commit is its write alone.
	if _, err := cell.Call(context.Background(), target.Get(target.IDFromName("callee")), func(ctx context.Context, o *echo) (int, error) { return 0, nil }); err != nil {
		t.Fatal(err)
	}
	c := w.dial(t, "/caller/a")
	wsWait(t, "the accepted socket", func() bool { return w.rt.OpenWebSockets() == 1 })
	if s := replyWhileHeld(t, w, c, "go", "the callee's commit", "came back: the call returned before the callee's write was durable"); s != "called" {
		t.Fatalf("after release: %q", s)
	}
}
