package chatroom

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/drivers/wasm"
)

func newRuntime(t *testing.T, dir string) *cell.Runtime {
	t.Helper()
	rt, err := cell.New(cell.Options{ScriptName: "cellb-example", Driver: wasm.New(), DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func serve(t *testing.T) (*App, *httptest.Server) {
	rt := newRuntime(t, t.TempDir())
	t.Cleanup(func() { rt.Close(context.Background()) })
	app, err := Register(rt, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	app.Routes(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return app, hs
}

func TestRoomMessagesExpireByAlarm(t *testing.T) {
	app, hs := serve(t)
	stored := func() int64 {
		n, err := cell.Call(context.Background(), app.NS.Get(app.NS.IDFromName("lobby")), func(ctx context.Context, r *Room) (int64, error) {
			var n int64
			err := r.st.SQL().QueryRow(ctx, "SELECT count(*) FROM messages").Scan(&n)
			return n, err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	post := func(text, query string) (int, map[string]int64) {
		resp, err := http.Post(hs.URL+"/room/lobby"+query, "text/plain", strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]int64
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	list := func() []Message {
		resp, err := http.Get(hs.URL + "/room/lobby")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Messages []Message }
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	if code, out := post("short-lived", "?ttl=300"); code != 200 || out["id"] != 1 {
		t.Fatalf("post: %d %v", code, out)
	}
	if code, _ := post("stays", ""); code != 200 {
		t.Fatalf("post: %d", code)
	}
	if m := list(); len(m) != 2 || m[0].Text != "short-lived" {
		t.Fatalf("messages %+v", m)
	}
	// The alarm deletes the expired message from the database (not just
	// from the listing) and re-arms for the other one.
	deadline := time.Now().Add(10 * time.Second)
	for stored() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages stored: the alarm never deleted the expired one", stored())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m := list(); len(m) != 1 || m[0].Text != "stays" {
		t.Fatalf("messages %+v", m)
	}
	for _, bad := range []string{"?ttl=0", "?ttl=x"} {
		if code, _ := post("x", bad); code != 400 {
			t.Errorf("post %s: %d, want 400", bad, code)
		}
	}
	if code, _ := post("", ""); code != 400 {
		t.Errorf("empty message: %d, want 400", code)
	}
	if code, _ := post(strings.Repeat("x", MaxMessageBytes+1), ""); code != 400 {
		t.Errorf("oversized message: %d, want 400", code)
	}
}

// plan is SQLite's query plan for q, one detail per line.
func plan(ctx context.Context, st *cell.State, q string, args ...any) (string, error) {
	rows, err := st.SQL().Query(ctx, "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int64
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return "", err
		}
		b.WriteString(detail + "\n")
	}
	return b.String(), rows.Err()
}

// TestExpiryQueriesUseTheIndex: finding the next expiry (once per post)
// and deleting the expired read the expiry index, not the whole table.
func TestExpiryQueriesUseTheIndex(t *testing.T) {
	app, _ := serve(t)
	plans, err := cell.Call(context.Background(), app.NS.Get(app.NS.IDFromName("lobby")), func(ctx context.Context, r *Room) ([]string, error) {
		next, err := plan(ctx, r.st, nextExpiry)
		if err != nil {
			return nil, err
		}
		del, err := plan(ctx, r.st, deleteExpired, int64(0))
		return []string{nextExpiry + ": " + next, deleteExpired + ": " + del}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		if !strings.Contains(p, "USING COVERING INDEX messages_expires") && !strings.Contains(p, "USING INDEX messages_expires") {
			t.Errorf("%s does not use the expiry index", strings.TrimSpace(p))
		}
	}
}

// TestExistingRoomGetsTheIndex: a room created before the index existed
// gets it when it is next opened, its messages intact.
func TestExistingRoomGetsTheIndex(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	old := newRuntime(t, dir)
	ns, err := cell.Register(old, Class, func(ctx context.Context, st *cell.State) (*Room, error) {
		_, err := st.SQL().Exec(ctx, createTable) // the schema without the index
		return &Room{st: st}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cell.Call(ctx, ns.Get(ns.IDFromName("lobby")), func(ctx context.Context, r *Room) (int64, error) {
		id, _, err := r.Post(ctx, "before the index", time.Hour)
		return id, err
	}); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(ctx); err != nil {
		t.Fatal(err)
	}

	rt := newRuntime(t, dir)
	defer rt.Close(ctx)
	app, err := Register(rt, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		index int64
		msgs  []Message
	}
	got, err := cell.Call(ctx, app.NS.Get(app.NS.IDFromName("lobby")), func(ctx context.Context, r *Room) (seen, error) {
		var s seen
		if err := r.st.SQL().QueryRow(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'messages_expires'").Scan(&s.index); err != nil {
			return s, err
		}
		var err error
		s.msgs, err = r.List(ctx)
		return s, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.index != 1 || len(got.msgs) != 1 || got.msgs[0].Text != "before the index" {
		t.Fatalf("index %d, messages %+v", got.index, got.msgs)
	}
}
