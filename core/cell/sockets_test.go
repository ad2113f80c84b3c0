package cell

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// socketState is a State on an instance that was never activated: enough
// for the socket set, which lives in the runtime and needs no database.
func socketState(t *testing.T, name string) (*Runtime, *State) {
	t.Helper()
	rt, err := New(Options{Driver: noDriver{}, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	cls := &class{name: "Room"}
	id := IDFromName("s", "Room", name)
	inst := &instance{rt: rt, cls: cls, id: id, key: CellKey("Room", id)}
	return rt, &State{inst: inst}
}

func TestAcceptWebSocketKeepsTagsAndLists(t *testing.T) {
	rt, st := socketState(t, "a")
	a, b := newWebSocket(rt), newWebSocket(rt)
	if err := st.AcceptWebSocket(a, "red", "blue", "red"); err != nil {
		t.Fatal(err)
	}
	if err := st.AcceptWebSocket(b, "blue"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(a.Tags(), ","); got != "red,blue" {
		t.Fatalf("tags %q, want duplicates dropped: red,blue", got)
	}
	if got := st.WebSockets(""); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("all sockets %v, want [a b] in accept order", got)
	}
	if got := st.WebSockets("red"); len(got) != 1 || got[0] != a {
		t.Fatalf("tag red: %v, want [a]", got)
	}
	if got := st.WebSockets("green"); len(got) != 0 {
		t.Fatalf("tag green: %v, want none", got)
	}
	if err := st.AcceptWebSocket(a); !errors.Is(err, ErrWebSocketAccepted) {
		t.Fatalf("second accept: %v, want ErrWebSocketAccepted", err)
	}
	if rt.OpenWebSockets() != 2 {
		t.Fatalf("OpenWebSockets %d, want 2", rt.OpenWebSockets())
	}
	// The set is the runtime's: another State of the same cell (a fresh
	// instance after hibernation) sees the same sockets.
	_, st2 := socketState(t, "a")
	st2.inst.rt = rt
	if got := st2.WebSockets(""); len(got) != 2 {
		t.Fatalf("a fresh instance sees %d sockets, want 2", len(got))
	}
	rt.sockets.remove(a)
	if got := st.WebSockets(""); len(got) != 1 || got[0] != b {
		t.Fatalf("after removing a: %v, want [b]", got)
	}
}

func TestAcceptWebSocketLimits(t *testing.T) {
	rt, st := socketState(t, "limits")
	var le *WebSocketLimitError
	tags := make([]string, MaxWebSocketTags+1)
	for i := range tags {
		tags[i] = string(rune('a' + i))
	}
	if err := st.AcceptWebSocket(newWebSocket(rt), tags...); !errors.As(err, &le) || le.Limit != MaxWebSocketTags {
		t.Fatalf("11 tags: %v, want a *WebSocketLimitError for %d tags", err, MaxWebSocketTags)
	}
	if err := st.AcceptWebSocket(newWebSocket(rt), tags[:MaxWebSocketTags]...); err != nil {
		t.Fatalf("10 tags: %v", err)
	}
	if err := st.AcceptWebSocket(newWebSocket(rt), strings.Repeat("x", MaxWebSocketTagLen+1)); !errors.As(err, &le) || le.Limit != MaxWebSocketTagLen {
		t.Fatalf("257-byte tag: %v, want a *WebSocketLimitError", err)
	}
	if err := st.AcceptWebSocket(newWebSocket(rt), strings.Repeat("x", MaxWebSocketTagLen)); err != nil {
		t.Fatalf("256-byte tag: %v", err)
	}
	for i := 2; i < MaxWebSocketsPerObject; i++ {
		if err := st.AcceptWebSocket(newWebSocket(rt)); err != nil {
			t.Fatalf("socket %d: %v", i+1, err)
		}
	}
	if n := len(st.WebSockets("")); n != MaxWebSocketsPerObject {
		t.Fatalf("%d sockets, want %d", n, MaxWebSocketsPerObject)
	}
	if err := st.AcceptWebSocket(newWebSocket(rt)); !errors.As(err, &le) || le.Limit != MaxWebSocketsPerObject {
		t.Fatalf("socket 32,769: %v, want a *WebSocketLimitError", err)
	}
	if le.HTTPStatus() != 429 {
		t.Fatalf("too many sockets answers %d, want 429", le.HTTPStatus())
	}
	// Another object has a limit of its own.
	_, other := socketState(t, "other")
	other.inst.rt = rt
	if err := other.AcceptWebSocket(newWebSocket(rt)); err != nil {
		t.Fatalf("another object's first socket: %v", err)
	}
}

func TestWebSocketAttachment(t *testing.T) {
	rt, st := socketState(t, "att")
	ws := newWebSocket(rt)
	if err := st.AcceptWebSocket(ws); err != nil {
		t.Fatal(err)
	}
	var v map[string]int
	if ok, err := ws.DeserializeAttachment(&v); ok || err != nil {
		t.Fatalf("no attachment yet: ok=%v err=%v", ok, err)
	}
	if err := ws.SerializeAttachment(map[string]int{"seat": 7}); err != nil {
		t.Fatal(err)
	}
	if ok, err := ws.DeserializeAttachment(&v); !ok || err != nil || v["seat"] != 7 {
		t.Fatalf("attachment %v ok=%v err=%v, want seat 7", v, ok, err)
	}
	// The encoding is what counts: a 16 KiB string is 16 KiB + 2 quotes.
	var le *WebSocketLimitError
	if err := ws.SerializeAttachment(strings.Repeat("x", MaxWebSocketAttachment)); !errors.As(err, &le) {
		t.Fatalf("oversized attachment: %v, want a *WebSocketLimitError", err)
	}
	if err := ws.SerializeAttachment(strings.Repeat("x", MaxWebSocketAttachment-2)); err != nil {
		t.Fatalf("attachment of exactly 16 KiB: %v", err)
	}
	if ok, _ := ws.DeserializeAttachment(new(string)); !ok {
		t.Fatal("the largest attachment was not kept")
	}
}

func TestWebSocketAutoResponsePair(t *testing.T) {
	rt, st := socketState(t, "auto")
	if err := st.SetWebSocketAutoResponse("ping", "pong"); err != nil {
		t.Fatal(err)
	}
	if req, res, ok := st.WebSocketAutoResponse(); !ok || req != "ping" || res != "pong" {
		t.Fatalf("pair %q %q %v", req, res, ok)
	}
	set := rt.sockets.get(st.inst.key)
	if res, ok := set.autoResponse([]byte("ping")); !ok || res != "pong" {
		t.Fatalf("autoResponse(ping) = %q %v", res, ok)
	}
	if _, ok := set.autoResponse([]byte("ping ")); ok {
		t.Fatal("only the exact request is answered")
	}
	var le *WebSocketLimitError
	if err := st.SetWebSocketAutoResponse(strings.Repeat("p", MaxAutoResponseLen+1), "x"); !errors.As(err, &le) {
		t.Fatalf("long request: %v, want a *WebSocketLimitError", err)
	}
	if err := st.SetWebSocketAutoResponse("", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := st.WebSocketAutoResponse(); ok {
		t.Fatal("an empty request unsets the pair")
	}
}

func TestWebSocketSendNeedsAcceptAndRefusesLargeMessages(t *testing.T) {
	rt, st := socketState(t, "send")
	ctx := context.Background()
	ws := newWebSocket(rt)
	if err := ws.SendText(ctx, "x"); !errors.Is(err, ErrWebSocketNotAccepted) {
		t.Fatalf("send before accept: %v", err)
	}
	if err := st.AcceptWebSocket(ws); err != nil {
		t.Fatal(err)
	}
	var le *WebSocketLimitError
	if err := ws.Send(ctx, make([]byte, MaxWebSocketMessage+1)); !errors.As(err, &le) {
		t.Fatalf("32 MiB + 1: %v, want a *WebSocketLimitError", err)
	}
	if err := ws.SendText(ctx, "queued"); err != nil {
		t.Fatal(err)
	}
	if err := ws.Close(ctx, 1000, "bye"); err != nil {
		t.Fatal(err)
	}
	if err := ws.SendText(ctx, "late"); !errors.Is(err, ErrWebSocketClosed) {
		t.Fatalf("send after Close: %v, want ErrWebSocketClosed", err)
	}
	// A reset drops what is queued.
	rt.sockets.closeCell(st.inst.key, 1011, "reset")
	ws.mu.Lock()
	n := len(ws.queue)
	ws.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d frames still queued after a reset", n)
	}
}
