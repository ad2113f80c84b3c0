package host

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/lease"
)

// levels records the level and message of every log record.
type levels struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *levels) Enabled(context.Context, slog.Level) bool { return true }
func (l *levels) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r)
	return nil
}
func (l *levels) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *levels) WithGroup(string) slog.Handler      { return l }

func (l *levels) atLeast(level slog.Level) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		if r.Level >= level {
			out = append(out, r.Level.String()+" "+r.Message)
		}
	}
	return out
}

// TestRoutingLogsAtDebug: calls for cells another node owns are routine
// (Route forwards them): 25 concurrent calls to such cells log nothing at
// Warn or above, only at Debug.
func TestRoutingLogsAtDebug(t *testing.T) {
	log := &levels{}
	rt, err := cell.New(cell.Options{Driver: noDriver{}, DataDir: t.TempDir(), Lease: ownedByN2{}, Logger: slog.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	ns, err := cell.Register(rt, "Counter", func(context.Context, *cell.State) (obj, error) { return obj{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	h := &Host{log: slog.New(log)}
	var wg sync.WaitGroup
	for i := range 25 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stub := ns.Get(ns.IDFromName(string(rune('a' + i))))
			r := httptest.NewRequest("POST", "/x", nil)
			_, err := h.Route(httptest.NewRecorder(), r, nil, func() error {
				_, err := stub.Fetch(r.Context(), r)
				return err
			})
			var oe *lease.CellOwnedElsewhereError
			if !errors.As(err, &oe) {
				t.Errorf("%v, want the cell owned elsewhere", err)
			}
		}()
	}
	wg.Wait()
	if loud := log.atLeast(slog.LevelWarn); len(loud) > 0 {
		t.Fatalf("routine routing logged %d records at Warn or above, e.g. %q", len(loud), loud[0])
	}
	if len(log.atLeast(slog.LevelDebug)) == 0 {
		t.Fatal("the refusals were not logged at all (want Debug)")
	}
}
