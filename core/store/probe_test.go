package store_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// bent wraps a Store and lets a test replace Put or Delete.
type bent struct {
	store.Store
	put func(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error)
	del func(ctx context.Context, key string) error
}

func (b bent) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if b.put != nil {
		return b.put(ctx, key, data, opts)
	}
	return b.Store.Put(ctx, key, data, opts)
}

func (b bent) Delete(ctx context.Context, key string) error {
	if b.del != nil {
		return b.del(ctx, key)
	}
	return b.Store.Delete(ctx, key)
}

func TestProbePassesAndCleansUp(t *testing.T) {
	start := time.Unix(1_700_000_000, 123)
	fc := clock.NewFake(start)
	base := memstore.New()
	res, err := store.Prober{Clock: fc, Random: func() uint64 { return 0xabc }, Tag: "node-1"}.Run(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	if want := "probe/cas-1700000000000000123-node-1-0000000000000abc"; res.Key != want {
		t.Fatalf("key %q, want %q", res.Key, want)
	}
	if len(res.Steps) != 5 || res.Steps[4].Step != store.ProbeDelete {
		t.Fatalf("steps: %+v", res.Steps)
	}
	if base.Len() != 0 {
		t.Fatal("the probe left its key behind")
	}
	if err := store.Probe(t.Context(), base); err != nil {
		t.Fatal(err)
	}
}

func TestProbeDefaultKeyShape(t *testing.T) {
	var seen []string
	spy := bent{Store: memstore.New()}
	spy.put = func(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
		seen = append(seen, key)
		return spy.Store.Put(ctx, key, data, opts)
	}
	if err := store.Probe(t.Context(), spy); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^probe/cas-\d+-cellb-[0-9a-f]{16}$`).MatchString(seen[0]) {
		t.Fatalf("probe key %q does not have celld's shape", seen[0])
	}
}

func TestProbeNamesTheFailingStep(t *testing.T) {
	ignoreCondition := func(kind store.ConditionKind) func(*bent) {
		return func(b *bent) {
			b.put = func(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
				if opts.Condition.Kind == kind {
					opts.Condition = store.Condition{}
				}
				return b.Store.Put(ctx, key, data, opts)
			}
		}
	}
	failure := errors.New("disk on fire")
	tests := []struct {
		name      string
		bend      func(*bent)
		step      store.ProbeStep
		reason    string
		wantErr   error
		leftovers bool
	}{
		{"ignores If-None-Match", ignoreCondition(store.CreateOnly), store.ProbeRecreate, "ignores If-None-Match", nil, false},
		{"ignores If-Match", ignoreCondition(store.MatchVersion), store.ProbeStaleSwap, "ignores If-Match", nil, false},
		{"create fails", func(b *bent) {
			b.put = func(context.Context, string, []byte, store.PutOptions) (store.Version, error) { return "", failure }
		}, store.ProbeCreate, "create-only write failed", failure, false},
		{"constant version", func(b *bent) {
			b.put = func(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
				if opts.Condition.Kind == store.MatchVersion {
					opts.Condition = store.IfVersion("m1")
				}
				if _, err := b.Store.Put(ctx, key, data, opts); err != nil {
					return "", err
				}
				return "same", nil
			}
		}, store.ProbeSwap, "same version", nil, false},
		{"rejected write applied", func(b *bent) {
			b.put = func(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
				v, err := b.Store.Put(ctx, key, data, opts)
				if store.IsPreconditionFailed(err) && opts.Condition.Kind == store.MatchVersion {
					_, _ = b.Store.Put(ctx, key, data, store.PutOptions{})
				}
				return v, err
			}
		}, store.ProbeStaleSwap, "not the last write that applied", nil, false},
		{"delete fails", func(b *bent) {
			b.del = func(context.Context, string) error { return failure }
		}, store.ProbeDelete, "deleting the probe key failed", failure, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := memstore.New()
			b := &bent{Store: base}
			tc.bend(b)
			err := store.Probe(t.Context(), b)
			var pe *store.ProbeError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *ProbeError", err)
			}
			if pe.Step != tc.step || !strings.Contains(pe.Error(), tc.reason) {
				t.Fatalf("got %q (step %d), want step %d saying %q", err, pe.Step, tc.step, tc.reason)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("%v does not wrap %v", err, tc.wantErr)
			}
			if got := base.Len() != 0; got != tc.leftovers {
				t.Fatalf("probe key left behind: %v, want %v", got, tc.leftovers)
			}
			if tc.leftovers && pe.Cleanup == nil {
				t.Fatal("a failed clean-up is not reported")
			}
		})
	}
}

func TestProbeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := store.Probe(ctx, memstore.New())
	var pe *store.ProbeError
	if !errors.As(err, &pe) || pe.Step != store.ProbeCreate || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestProbeRejectsBadTag(t *testing.T) {
	base := memstore.New()
	if _, err := (store.Prober{Tag: "a/b"}).Run(t.Context(), base); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("got %v", err)
	}
	if base.Len() != 0 {
		t.Fatal("a bad tag still wrote")
	}
}

// TestProbeCost pins the request count the docs quote for the probe.
func TestProbeCost(t *testing.T) {
	fs := faultstore.New(memstore.New(), faultstore.Config{})
	if err := store.Probe(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	st := fs.Stats()
	if st.Calls() != store.ProbeRequests || st.Put.Calls != 4 || st.Get.Calls != 1 || st.Delete.Calls != 1 {
		t.Fatalf("the probe made %d requests (put %d, get %d, delete %d, list %d), want %d: 4 puts, 1 get, 1 delete",
			st.Calls(), st.Put.Calls, st.Get.Calls, st.Delete.Calls, st.List.Calls, store.ProbeRequests)
	}
}
