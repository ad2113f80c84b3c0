package fleet

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

var probeT0 = time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)

// ignoresConditions is a bucket that drops one kind of conditional header
// and applies such writes unconditionally, and records every key written.
type ignoresConditions struct {
	store.Store
	kind store.ConditionKind

	mu      sync.Mutex
	written []string
}

func (b *ignoresConditions) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	b.mu.Lock()
	b.written = append(b.written, key)
	b.mu.Unlock()
	if opts.Condition.Kind == b.kind {
		opts.Condition = store.Condition{}
	}
	return b.Store.Put(ctx, key, data, opts)
}

// TestJoinRefusesABucketThatIgnoresConditions: a node joining a bucket that
// ignores If-None-Match or If-Match stops with the probe's own error before
// it writes anything but the probe's key, which it removes. Two nodes on
// such a bucket could otherwise both own one cell at one epoch.
func TestJoinRefusesABucketThatIgnoresConditions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kind   store.ConditionKind
		step   store.ProbeStep
		header string
	}{
		{"if-none-match", store.CreateOnly, store.ProbeRecreate, "the bucket ignores If-None-Match: *"},
		{"if-match", store.MatchVersion, store.ProbeStaleSwap, "the bucket ignores If-Match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := memstore.New()
			b := &ignoresConditions{Store: inner, kind: tc.kind}
			n, err := Join(t.Context(), Options{Store: b, Node: "node_a", Clock: clock.NewFake(probeT0), Logger: quiet})
			if err == nil {
				n.Kill()
				t.Fatal("joined a bucket that ignores conditional writes")
			}
			var pe *store.ProbeError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want a *store.ProbeError", err, err)
			}
			if pe.Step != tc.step || err.Error() != pe.Error() || !strings.Contains(err.Error(), tc.header) {
				t.Fatalf("error %q at step %v, want the probe's own message naming %q at step %v", err, pe.Step, tc.header, tc.step)
			}
			if !strings.HasPrefix(pe.Key, "probe/cas-") || !strings.Contains(pe.Key, "-node_a-") {
				t.Fatalf("probe key %q, want probe/cas-<nanos>-node_a-<random>", pe.Key)
			}
			for _, k := range b.written {
				if k != pe.Key {
					t.Fatalf("wrote %s to a bucket that failed the probe", k)
				}
			}
			if inner.Len() != 0 {
				t.Fatalf("the refused join left %d objects in the bucket", inner.Len())
			}
		})
	}
}

// TestJoinProbesFirst: on a good bucket the probe runs before the node
// lease is installed, costs store.ProbeRequests requests, and leaves only
// the lease behind.
func TestJoinProbesFirst(t *testing.T) {
	inner := memstore.New()
	var mu sync.Mutex
	var order []string
	fs := faultstore.New(inner, faultstore.Config{BeforeCall: func(_ context.Context, c faultstore.Call) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, string(c.Op)+" "+c.Key)
		return nil
	}})
	joinNode(t, fs, clock.NewFake(probeT0), "node_a")
	mu.Lock()
	defer mu.Unlock()
	if len(order) < store.ProbeRequests+2 {
		t.Fatalf("calls %v", order)
	}
	for i, c := range order[:store.ProbeRequests] {
		if !strings.Contains(c, " probe/cas-") {
			t.Fatalf("call %d was %q before the probe finished (calls %v)", i, c, order)
		}
	}
	for _, c := range order[store.ProbeRequests:] {
		if strings.Contains(c, "probe/") {
			t.Fatalf("the probe made more than %d requests: %v", store.ProbeRequests, order)
		}
	}
	if want := []string{"get " + layout.NodeKey("node_a"), "put " + layout.NodeKey("node_a")}; order[store.ProbeRequests] != want[0] || order[store.ProbeRequests+1] != want[1] {
		t.Fatalf("after the probe %v, want %v", order[store.ProbeRequests:], want)
	}
	if inner.Len() != 1 {
		t.Fatalf("%d objects after joining, want the node lease alone", inner.Len())
	}
}
