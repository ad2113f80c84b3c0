package storetest_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// shared returns a harness whose two clients are the same in-memory bucket.
func shared(s store.Store) storetest.HarnessFunc {
	return func(context.Context) (store.Store, error) { return s, nil }
}

func TestMemstorePasses(t *testing.T) {
	storetest.Run(t, shared(memstore.New()))
}

func TestPrefixedMemstorePasses(t *testing.T) {
	base := memstore.New()
	storetest.Run(t, storetest.HarnessFunc(func(context.Context) (store.Store, error) {
		return store.WithPrefix(base, "tenant/app")
	}), suite.Skip("large-object"))
	if base.Len() != 0 {
		t.Fatalf("%d objects left in the bucket", base.Len())
	}
}

// TestContentHashVersionsPass runs the suite on a store whose versions
// are the MD5 of the body, as S3's ETags are: the suite must not demand
// more than S3 gives (a new version for an equal body).
func TestContentHashVersionsPass(t *testing.T) {
	storetest.Run(t, shared(newETagStore(memstore.New())), storetest.LargeObjectSize(1<<20))
}

func TestReportOnMemstore(t *testing.T) {
	base := memstore.New()
	var mu sync.Mutex
	var progress []string
	rep, err := storetest.RunReport(t.Context(), shared(base), suite.Progress(func(c, m string) {
		mu.Lock()
		progress = append(progress, c+": "+m)
		mu.Unlock()
	}))
	if err != nil || !rep.OK() || !rep.Complete() {
		for _, c := range rep.Cases {
			t.Logf("%s: %s %s", c.Name, c.Status, strings.Join(c.Failures, "; "))
		}
		t.Fatalf("report on memstore: %s; notes %q", rep, rep.Notes)
	}
	if len(rep.Cases) != len(storetest.Cases()) {
		t.Fatalf("%d results for %d cases", len(rep.Cases), len(storetest.Cases()))
	}
	if base.Len() != 0 {
		t.Fatalf("%d objects left behind", base.Len())
	}
	if !strings.HasPrefix(rep.Prefix, "storetest/") {
		t.Fatalf("run prefix %q", rep.Prefix)
	}
	var sawLarge bool
	for _, p := range progress {
		sawLarge = sawLarge || strings.HasPrefix(p, "large-object: uploaded 64 MiB")
	}
	if !slices.Contains(progress, "pagination: running") || !slices.ContainsFunc(progress, func(p string) bool { return strings.HasPrefix(p, "pagination: pass in ") }) {
		t.Fatalf("no start and end progress for each case: %q", progress)
	}
	if !sawLarge {
		t.Fatalf("no progress for the large object: %q", progress)
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "same instance") {
		t.Fatalf("notes %q should say only that both clients are one instance", rep.Notes)
	}
}

func TestQuickSkipsSlowCasesAndSaysSo(t *testing.T) {
	rep, err := storetest.RunReport(t.Context(), shared(memstore.New()), suite.Quick())
	if err != nil || !rep.OK() || rep.Complete() {
		t.Fatalf("quick run: ok=%v complete=%v (%s)", rep.OK(), rep.Complete(), rep)
	}
	for _, c := range storetest.Cases() {
		r, _ := rep.Case(c.Name)
		if c.Slow != (r.Status == suite.Skipped) {
			t.Errorf("%s: slow=%v status=%s", c.Name, c.Slow, r.Status)
		}
	}
}

func TestLoweredSizesAreReported(t *testing.T) {
	rep, err := storetest.RunReport(t.Context(), shared(memstore.New()),
		suite.Only("large-object", "contention-cas"),
		storetest.LargeObjectSize(1<<20), storetest.Contention(4, 2))
	if err != nil || !rep.OK() {
		t.Fatal(rep, err)
	}
	notes := strings.Join(rep.Notes, "\n")
	for _, want := range []string{"large-object lowered to 1 MiB (default 64 MiB)", "contention lowered to 4 goroutines x 2 rounds"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q do not say %q", notes, want)
		}
	}
	if r, _ := rep.Case("pagination"); r.Status != suite.Skipped || r.Reason != "not selected" {
		t.Errorf("pagination: %+v", r)
	}
	if r, _ := rep.Case("large-object"); len(r.Log) == 0 || !strings.Contains(r.Log[0], "lowered") {
		t.Errorf("the large-object case does not log its lowered size: %q", r.Log)
	}
}

func TestSetupFailureIsReported(t *testing.T) {
	boom := errors.New("no credentials")
	rep, err := storetest.RunReport(t.Context(), storetest.HarnessFunc(func(context.Context) (store.Store, error) { return nil, boom }))
	if !errors.Is(err, boom) || rep.OK() || !strings.Contains(rep.SetupError, "no credentials") || len(rep.Cases) != 0 {
		t.Fatalf("report: %+v", rep)
	}
}

func TestCancelledRunSkipsTheRest(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rep, err := storetest.RunReport(ctx, shared(memstore.New()))
	if !errors.Is(err, context.Canceled) || rep.Complete() {
		t.Fatal("a cancelled run claims to be complete")
	}
	if r, _ := rep.Case("probe"); r.Status != suite.Skipped || !strings.Contains(r.Reason, "context canceled") {
		t.Fatalf("probe: %+v", r)
	}
}

// etagStore gives every object a version equal to the MD5 of its body and
// checks If-Match against it, as S3 does, on top of any store.
type etagStore struct {
	store.Store
	mu      sync.Mutex
	byInner map[store.Version]store.Version // inner version -> ETag
}

func newETagStore(s store.Store) *etagStore {
	return &etagStore{Store: s, byInner: map[store.Version]store.Version{}}
}

func etag(b []byte) store.Version {
	sum := md5.Sum(b)
	return store.Version(`"` + hex.EncodeToString(sum[:]) + `"`)
}

func (s *etagStore) Get(ctx context.Context, key string) (*store.Object, error) {
	o, err := s.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	o.Version = etag(o.Data)
	return o, nil
}

func (s *etagStore) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if opts.Condition.Kind == store.MatchVersion {
		cur, err := s.Store.Get(ctx, key)
		if store.IsNotFound(err) {
			return "", store.PreconditionFailed("put", key)
		}
		if err != nil {
			return "", err
		}
		if etag(cur.Data) != opts.Condition.Version {
			return "", store.PreconditionFailed("put", key)
		}
		opts.Condition = store.IfVersion(cur.Version)
	}
	v, err := s.Store.Put(ctx, key, data, opts)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.byInner[v] = etag(data)
	s.mu.Unlock()
	return etag(data), nil
}

func (s *etagStore) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	p, err := s.Store.List(ctx, opts)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range p.Objects {
		p.Objects[i].Version = s.byInner[o.Version]
	}
	return p, err
}
