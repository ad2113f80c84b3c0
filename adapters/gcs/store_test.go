package gcs_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cellb/cellb/adapters/gcs"
	"github.com/cellb/cellb/core/store"
)

// serverOptions returns Options for the emulator .ci/servers/fake-gcs.sh
// starts. Outside CI a missing server skips the test; in CI it fails it.
func serverOptions(t testing.TB) gcs.Options {
	t.Helper()
	endpoint := os.Getenv("CELLB_TEST_GCS_ENDPOINT")
	if endpoint == "" {
		if serversRequired() {
			t.Fatal("CELLB_TEST_GCS_ENDPOINT is not set, but the emulators are required (CI=true or CELLB_CI_REQUIRE_EMULATORS=1): .ci/servers/fake-gcs.sh should have started a server")
		}
		t.Skip("CELLB_TEST_GCS_ENDPOINT is not set; start a server with: bash .ci/servers/fake-gcs.sh start /tmp/gcs && source /tmp/gcs/env")
	}
	return gcs.Options{
		Bucket:    os.Getenv("CELLB_TEST_GCS_BUCKET"),
		Endpoint:  strings.TrimSuffix(endpoint, "/") + "/storage/v1/",
		Anonymous: true,
		// The emulator ignores ifGenerationMatch on a rewrite (see
		// TestCopyRewritesInTheService).
		StreamCopies: true,
	}
}

// openServer opens a Store on the emulator under a fresh prefix and
// removes everything under it when the test ends.
func openServer(t testing.TB) store.Store {
	t.Helper()
	raw, err := gcs.New(t.Context(), serverOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.WithPrefix(raw, "test-"+randomHex(8))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		all, err := store.ListAll(ctx, st, store.ListOptions{})
		if err != nil {
			t.Errorf("cleanup: list: %v", err)
		}
		for _, o := range all.Objects {
			if err := st.Delete(ctx, o.Key); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		store.Close(st)
	})
	return st
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func TestConditionalWrites(t *testing.T) {
	ctx := t.Context()
	st := openServer(t)

	v1, err := st.Put(ctx, "k", []byte("one"), store.PutOptions{Condition: store.IfAbsent, Metadata: map[string]string{"litestream-timestamp": "2026-05-30T02:46:41.091Z"}})
	if err != nil {
		t.Fatalf("create-only on a new key: %v", err)
	}
	if _, err := st.Put(ctx, "k", []byte("again"), store.PutOptions{Condition: store.IfAbsent}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("second create-only: got %v, want ErrPreconditionFailed", err)
	}
	got, err := st.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Data) != "one" || got.Version != v1 {
		t.Fatalf("after rejected create: %q %s, want %q %s", got.Data, got.Version, "one", v1)
	}
	if got.Metadata["litestream-timestamp"] != "2026-05-30T02:46:41.091Z" {
		t.Fatalf("metadata = %v", got.Metadata)
	}
	// The ETag trap does not exist here: an equal body gets a new generation.
	v2, err := st.Put(ctx, "k", []byte("one"), store.PutOptions{Condition: store.IfVersion(v1)})
	if err != nil {
		t.Fatalf("generation match: %v", err)
	}
	if v2 == v1 {
		t.Fatalf("rewriting the same body kept generation %s", v1)
	}
	if _, err := st.Put(ctx, "k", []byte("one"), store.PutOptions{Condition: store.IfVersion(v1)}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("stale generation with an equal body: got %v, want ErrPreconditionFailed", err)
	}
	if _, err := st.Put(ctx, "missing", []byte("x"), store.PutOptions{Condition: store.IfVersion(v2)}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("generation match on a missing key: got %v, want ErrPreconditionFailed", err)
	}
	for _, bad := range []store.Version{"", "abc", "-3", "0"} {
		if _, err := st.Put(ctx, "k", []byte("x"), store.PutOptions{Condition: store.IfVersion(bad)}); !errors.Is(err, store.ErrPreconditionFailed) {
			t.Fatalf("version %q: got %v, want ErrPreconditionFailed", bad, err)
		}
	}
	if _, err := st.Get(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get missing: got %v, want ErrNotFound", err)
	}
	page, err := st.List(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 || page.Objects[0].Key != "k" || page.Objects[0].Version != v2 || page.Objects[0].Size != 3 {
		t.Fatalf("list = %+v, want k with version %s", page.Objects, v2)
	}
	if err := st.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "k"); err != nil {
		t.Fatalf("deleting a missing key: %v", err)
	}
}

// TestRaces checks that exactly one of many concurrent conditional writers
// wins, for create-only and for generation match.
func TestRaces(t *testing.T) {
	ctx := t.Context()
	st := openServer(t)
	const writers = 8
	race := func(cond store.Condition) (winners int, v store.Version) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range writers {
			wg.Go(func() {
				ver, err := st.Put(ctx, "race", []byte(fmt.Sprintf("writer %d", i)), store.PutOptions{Condition: cond})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners++
					v = ver
				case !errors.Is(err, store.ErrPreconditionFailed):
					t.Errorf("writer %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		return winners, v
	}
	n, v := race(store.IfAbsent)
	if n != 1 {
		t.Fatalf("create-only race: %d winners", n)
	}
	if n, _ := race(store.IfVersion(v)); n != 1 {
		t.Fatalf("generation-match race: %d winners", n)
	}
}

// fakeGCS answers every upload with the given status and counts them, to
// check how failures are classified and that conditional uploads are sent
// exactly once.
type fakeGCS struct {
	status   int
	noGen    bool
	requests atomic.Int32
}

func (f *fakeGCS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	f.requests.Add(1)
	w.Header().Set("Content-Type", "application/json")
	if f.status == http.StatusOK {
		gen := `,"generation":"1234"`
		if f.noGen {
			gen = ""
		}
		fmt.Fprintf(w, `{"kind":"storage#object","name":"k","bucket":"b","size":"4"%s}`, gen)
		return
	}
	w.WriteHeader(f.status)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":"fake failure","errors":[{"reason":"fake","message":"fake failure"}]}}`, f.status)
}

func openFake(t *testing.T, f *fakeGCS) store.Store {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	st, err := gcs.New(t.Context(), gcs.Options{Bucket: "b", Endpoint: srv.URL + "/storage/v1/", Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(st) })
	return st
}

func TestErrorClassification(t *testing.T) {
	cases := []struct {
		name string
		fake fakeGCS
		cond store.Condition
		want error
	}{
		{"412 on create-only", fakeGCS{status: 412}, store.IfAbsent, store.ErrPreconditionFailed},
		{"412 on generation match", fakeGCS{status: 412}, store.IfVersion("7"), store.ErrPreconditionFailed},
		{"500 on create-only is ambiguous and not retried", fakeGCS{status: 500}, store.IfAbsent, store.ErrAmbiguous},
		{"503 on generation match is ambiguous and not retried", fakeGCS{status: 503}, store.IfVersion("7"), store.ErrAmbiguous},
		{"409 on create-only is ambiguous", fakeGCS{status: 409}, store.IfAbsent, store.ErrAmbiguous},
		{"403 on a plain put is a definite refusal", fakeGCS{status: 403}, store.Condition{}, store.ErrAccessDenied},
		{"401 on create-only is a definite refusal", fakeGCS{status: 401}, store.IfAbsent, store.ErrAccessDenied},
		{"404 on generation match is a missing bucket", fakeGCS{status: 404}, store.IfVersion("7"), store.ErrBucketNotFound},
		{"no generation on success is ambiguous", fakeGCS{status: 200, noGen: true}, store.IfAbsent, store.ErrAmbiguous},
	}
	for i := range cases {
		c := &cases[i]
		t.Run(c.name, func(t *testing.T) {
			st := openFake(t, &c.fake)
			_, err := st.Put(t.Context(), "k", []byte("body"), store.PutOptions{Condition: c.cond})
			if err == nil {
				t.Fatal("Put succeeded")
			}
			for _, kind := range []error{store.ErrPreconditionFailed, store.ErrAmbiguous, store.ErrNotFound, store.ErrAccessDenied, store.ErrBucketNotFound} {
				if errors.Is(err, kind) != (kind == c.want) {
					t.Fatalf("err = %v; errors.Is(err, %q) = %v", err, kind, errors.Is(err, kind))
				}
			}
			if n := c.fake.requests.Load(); n != 1 {
				t.Fatalf("server saw %d requests, want 1", n)
			}
		})
	}
}

func TestRejectsBadInput(t *testing.T) {
	f := &fakeGCS{status: 200}
	st := openFake(t, f)
	ctx := t.Context()
	if _, err := st.Put(ctx, "a//b", []byte("b"), store.PutOptions{}); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("bad key: %v", err)
	}
	if _, err := st.Put(ctx, "k", []byte("b"), store.PutOptions{Metadata: map[string]string{"x": "\n"}}); !errors.Is(err, store.ErrInvalidMetadata) {
		t.Fatalf("bad metadata: %v", err)
	}
	if n := f.requests.Load(); n != 0 {
		t.Fatalf("bad input reached the server %d times", n)
	}
	if _, err := gcs.New(ctx, gcs.Options{}); err == nil {
		t.Fatal("New accepted an empty bucket name")
	}
}

// On the emulator a missing bucket is a definite refusal for writes and
// listings, on one short line naming what to check. (The emulator does
// not check credentials; 401 and 403 are covered by
// TestErrorClassification.)
func TestMissingBucketOnTheServer(t *testing.T) {
	opts := serverOptions(t)
	opts.Bucket = "no-such-bucket-" + randomHex(4)
	st, err := gcs.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(st)
	ctx := t.Context()
	_, perr := st.Put(ctx, "k", []byte("x"), store.PutOptions{Condition: store.IfAbsent})
	_, lerr := st.List(ctx, store.ListOptions{})
	for op, err := range map[string]error{"put": perr, "list": lerr} {
		switch {
		case !errors.Is(err, store.ErrBucketNotFound):
			t.Errorf("%s: %v, want ErrBucketNotFound", op, err)
		case store.IsAmbiguous(err):
			t.Errorf("%s: %v is ambiguous", op, err)
		case !strings.Contains(err.Error(), "bucket's name") || len(err.Error()) > 300:
			t.Errorf("%s: message %q: want one short line with the hint", op, err)
		}
	}
}

// serversRequired reports whether a missing emulator must fail the test
// rather than skip it: under CI=true, and inside .ci/run, which starts every
// emulator and sets CELLB_CI_REQUIRE_EMULATORS=1 (docs/testing.md).
func serversRequired() bool {
	return os.Getenv("CI") == "true" || os.Getenv("CELLB_CI_REQUIRE_EMULATORS") == "1"
}
