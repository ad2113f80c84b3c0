package chatroom

import (
	"context"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/cellbtest"
	"github.com/cellb/cellb/drivers/wasm"
)

// TestExpiryWithFakeClock is the example of docs/testing-cells.md: a room
// on a cellbtest node, whose messages expire when the test moves the
// clock, through the room's own alarm.
func TestExpiryWithFakeClock(t *testing.T) {
	node := cellbtest.New(t, wasm.New())
	app, err := Register(node.Runtime, Options{})
	if err != nil {
		t.Fatal(err)
	}
	room := app.NS.Get(app.NS.IDFromName("lobby"))
	ctx := context.Background()
	post := func(text string, ttl time.Duration) {
		t.Helper()
		if _, err := cell.Call(ctx, room, func(ctx context.Context, r *Room) (int64, error) {
			id, _, err := r.Post(ctx, text, ttl)
			return id, err
		}); err != nil {
			t.Fatal(err)
		}
	}
	post("short", time.Minute)
	post("long", time.Hour)
	if at, set := cellbtest.Alarm(t, room); !set || !at.Equal(cellbtest.Start.Add(time.Minute)) {
		t.Fatalf("alarm %v (set %v), want the first expiry, a minute from the start", at, set)
	}

	node.Advance(59 * time.Second)
	if rows := cellbtest.Rows(t, room, "SELECT text FROM messages ORDER BY id"); len(rows) != 2 {
		t.Fatalf("before the first expiry the room stores %v, want both messages", rows)
	}
	node.Advance(time.Second) // the alarm falls due and runs
	if rows := cellbtest.Rows(t, room, "SELECT text FROM messages"); len(rows) != 1 || rows[0][0] != "long" {
		t.Fatalf("after the first expiry the room stores %v, want only the long one", rows)
	}
	if at, set := cellbtest.Alarm(t, room); !set || !at.Equal(cellbtest.Start.Add(time.Hour)) {
		t.Fatalf("after the first expiry the alarm is %v (set %v), want the second expiry", at, set)
	}
	node.Advance(time.Hour)
	if rows := cellbtest.Rows(t, room, "SELECT text FROM messages"); len(rows) != 0 {
		t.Fatalf("after both expiries the room stores %v", rows)
	}
	if _, set := cellbtest.Alarm(t, room); set {
		t.Fatal("an empty room keeps an alarm")
	}
}
