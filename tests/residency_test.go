package tests

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/drivers/wasm"
	"github.com/cellb/cellb/examples/counter"
)

// TestAlarmKeepsACellResident: an idle cell whose alarm is due within
// AlarmResidency stays in memory past its idle timeout (celld's
// CELLD_ALARM_RESIDENT_MS); once the alarm has run it is evicted as usual.
// With residency off it is evicted at once.
func TestAlarmKeepsACellResident(t *testing.T) {
	for _, residency := range []time.Duration{10 * time.Minute, -1} {
		t.Run(residency.String(), func(t *testing.T) {
			ctx := context.Background()
			clk := clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
			rt, err := cell.New(cell.Options{
				ScriptName: "residency", Driver: wasm.New(), DataDir: t.TempDir(), Clock: clk,
				Logger: quietLogger(), IdleTimeout: time.Minute, AlarmResidency: residency,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(ctx)
			ns, err := cell.Register(rt, counter.Class, counter.New)
			if err != nil {
				t.Fatal(err)
			}
			call := func(name string, fn func(ctx context.Context, c *counter.Counter) (int64, error)) int64 {
				t.Helper()
				v, err := cell.Call(ctx, ns.Get(ns.IDFromName(name)), fn)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			key := func(name string) string { return cell.CellKey("Counter", ns.IDFromName(name)) }
			call("armed", func(ctx context.Context, c *counter.Counter) (int64, error) {
				return 0, c.SetAlarm(ctx, clk.Now().Add(5*time.Minute))
			})
			call("plain", func(ctx context.Context, c *counter.Counter) (int64, error) { return c.Add(ctx, 1) })
			open := func(want ...string) {
				t.Helper()
				for i := range want {
					want[i] = key(want[i])
				}
				slices.Sort(want)
				deadline := time.Now().Add(10 * time.Second)
				for !slices.Equal(rt.ActiveCells(), want) {
					if time.Now().After(deadline) {
						t.Fatalf("open cells %v, want %v", rt.ActiveCells(), want)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			clk.Advance(2 * time.Minute)
			if residency < 0 {
				open()
				return
			}
			open("armed")                // idle, but its alarm is due within the residency
			clk.Advance(4 * time.Minute) // the alarm runs (+1000), then idles
			deadline := time.Now().Add(10 * time.Second)
			for call("armed", func(ctx context.Context, c *counter.Counter) (int64, error) { return c.Value(ctx) }) != 1000 {
				if time.Now().After(deadline) {
					t.Fatal("the alarm never ran")
				}
				time.Sleep(5 * time.Millisecond)
			}
			clk.Advance(2 * time.Minute)
			open() // no alarm any more: evicted like any idle cell
		})
	}
}
