package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/wake"
)

// TestFleetWakesTheAlarmOfADeadOwner: a room on node a arms its alarm (a
// message that expires), and a is SIGKILLed. Nobody sends the room a
// request again, yet node b, holding the waker role, finds the due entry
// in the bucket's wake index, takes the room over and runs its alarm: the
// message expires, the room's alarm is deleted, and the retirement
// certificate says so under b's epoch.
func TestFleetWakesTheAlarmOfADeadOwner(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := cellbBinary(t)
	bucketDir := t.TempDir()
	bucketURL := "file://" + bucketDir
	start := func(node string) *proc {
		return startNode(t, bin, bucketURL, node, "--ttl", "2s", "--idle", "1m", "--wake-tick", "500ms", "--wake-poll", "500ms")
	}
	a := start("a")
	b := start("b")

	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Post(a.url+"/room/lobby?ttl=2000", "text/plain", strings.NewReader("gone soon"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("post: %s", resp.Status)
	}

	ctx := context.Background()
	bucket, err := openBucket(ctx, bucketMux(), bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(bucket)
	// The reply waited for the publication: the entry is there already.
	page, err := store.ListAll(ctx, bucket, store.ListOptions{Prefix: layout.WakeEntriesPrefix})
	if err != nil {
		t.Fatal(err)
	}
	var room string
	for _, o := range page.Objects {
		ref, err := wake.ParseEntryKey(o.Key)
		if err == nil && !ref.Seed && strings.HasPrefix(ref.Cell, "Room:") {
			room = ref.Cell
		}
	}
	if room == "" {
		t.Fatalf("no wake entry for the room after its alarm was set: %v", page.Objects)
	}
	a.kill()

	deadline := time.Now().Add(45 * time.Second)
	for {
		own, ownErr := bucket.Get(ctx, layout.OwnKey(room))
		ret, retErr := bucket.Get(ctx, layout.WakeRetiredKey(room))
		if ownErr == nil && retErr == nil {
			o, err1 := layout.DecodeOwnRecord(layout.OwnKey(room), own.Data)
			r, err2 := wake.DecodeRetired(layout.WakeRetiredKey(room), ret.Data)
			if err1 == nil && err2 == nil && o.Node == "b" && r.AtMs == nil && r.Identity.Epoch == o.Epoch {
				break // b woke the room, its alarm ran, and nothing is armed
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead owner's alarm never ran on b (own.json %s, retired %s; see %s)", describe(own, ownErr), describe(ret, retErr), b.logf.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The message expired without any request reaching the room.
	resp, err = client.Get(b.url + "/room/lobby")
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Messages []any }
	if err := jsonDecode(resp, &body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(body.Messages) != 0 {
		t.Fatalf("messages after the alarm ran: %v", body.Messages)
	}
}

func describe(o *store.Object, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%q", o.Data)
}
