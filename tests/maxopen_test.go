package tests

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/drivers/wasm"
	"github.com/cellb/cellb/examples/counter"
)

// TestRuntimeCapsOpenCells: with MaxOpenCells set, activating one cell too
// many evicts the longest-idle cell; a cell with an event in flight is
// never evicted, however long ago it was activated.
func TestRuntimeCapsOpenCells(t *testing.T) {
	ctx := context.Background()
	rt, err := cell.New(cell.Options{
		ScriptName: "maxopen", Driver: wasm.New(), DataDir: t.TempDir(),
		Logger: quietLogger(), IdleTimeout: -1, MaxOpenCells: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	ns, err := cell.Register(rt, counter.Class, counter.New)
	if err != nil {
		t.Fatal(err)
	}
	key := func(name string) string { return cell.CellKey("Counter", ns.IDFromName(name)) }
	touch := func(name string) {
		t.Helper()
		if _, err := cell.Call(ctx, ns.Get(ns.IDFromName(name)), func(ctx context.Context, c *counter.Counter) (int64, error) {
			return c.Add(ctx, 1)
		}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	expectOpen := func(names ...string) {
		t.Helper()
		want := make([]string, len(names))
		for i, n := range names {
			want[i] = key(n)
		}
		slices.Sort(want)
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := rt.ActiveCells()
			if slices.Equal(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("open cells %v, want %v", got, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for i := 1; i <= 5; i++ {
		touch(fmt.Sprint(i))
		time.Sleep(2 * time.Millisecond) // distinct idle times
	}
	expectOpen("3", "4", "5")
	touch("3") // now the most recently used
	time.Sleep(2 * time.Millisecond)
	touch("6")
	expectOpen("3", "5", "6")

	// A busy cell stays open past the cap.
	release := make(chan struct{})
	busy := make(chan error, 1)
	go func() {
		_, err := cell.Call(ctx, ns.Get(ns.IDFromName("3")), func(ctx context.Context, c *counter.Counter) (int64, error) {
			<-release
			return 0, nil
		})
		busy <- err
	}()
	time.Sleep(20 * time.Millisecond)
	touch("7")
	touch("8")
	expectOpen("3", "7", "8")
	close(release)
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
}
