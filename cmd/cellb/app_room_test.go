package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
)

func TestRoomMessagesExpireByAlarm(t *testing.T) {
	s, hs := startServer(t, serveConfig{Data: t.TempDir()})
	stored := func() int64 {
		n, err := cell.Call(context.Background(), s.rooms.ns.Get(s.rooms.ns.IDFromName("lobby")), func(ctx context.Context, r *Room) (int64, error) {
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
	list := func() []roomMessage {
		resp, err := http.Get(hs.URL + "/room/lobby")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Messages []roomMessage }
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
	if code, _ := post(strings.Repeat("x", maxMessageBytes+1), ""); code != 400 {
		t.Errorf("oversized message: %d, want 400", code)
	}
}
