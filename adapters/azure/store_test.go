package azure_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
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
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/cellb/cellb/adapters/azure"
	"github.com/cellb/cellb/core/store"
)

// serverOptions returns Options for the Azurite .ci/servers/azurite.sh
// starts. Outside CI a missing server skips the test; in CI it fails it.
func serverOptions(t testing.TB) azure.Options {
	t.Helper()
	endpoint := os.Getenv("CELLB_TEST_AZURE_ENDPOINT")
	if endpoint == "" {
		if serversRequired() {
			t.Fatal("CELLB_TEST_AZURE_ENDPOINT is not set, but the emulators are required (CI=true or CELLB_CI_REQUIRE_EMULATORS=1): .ci/servers/azurite.sh should have started Azurite")
		}
		t.Skip("CELLB_TEST_AZURE_ENDPOINT is not set; start Azurite with: bash .ci/servers/azurite.sh start /tmp/az && source /tmp/az/env")
	}
	return azure.Options{
		Container:  os.Getenv("CELLB_TEST_AZURE_CONTAINER"),
		ServiceURL: endpoint,
		Account:    os.Getenv("CELLB_TEST_AZURE_ACCOUNT"),
		AccountKey: os.Getenv("CELLB_TEST_AZURE_KEY"),
	}
}

// openServer opens a Store on Azurite under a fresh prefix and removes
// everything under it when the test ends.
func openServer(t testing.TB, tweak func(*azure.Options)) store.Store {
	t.Helper()
	opts := serverOptions(t)
	if tweak != nil {
		tweak(&opts)
	}
	raw, err := azure.New(t.Context(), opts)
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
	st := openServer(t, nil)

	v1, err := st.Put(ctx, "k", []byte("one"), store.PutOptions{Condition: store.IfAbsent, Metadata: map[string]string{"litestream-timestamp": "2026-05-30T02:46:41.091Z"}})
	if err != nil {
		t.Fatalf("create-only on a new key: %v", err)
	}
	if _, err := st.Put(ctx, "k", []byte("again"), store.PutOptions{Condition: store.IfAbsent}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("second create-only (Azure: 409 BlobAlreadyExists): got %v, want ErrPreconditionFailed", err)
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
	// An equal body gets a new ETag: Azure's ETags are not content hashes.
	v2, err := st.Put(ctx, "k", []byte("one"), store.PutOptions{Condition: store.IfVersion(v1)})
	if err != nil {
		t.Fatalf("if-match current: %v", err)
	}
	if v2 == v1 {
		t.Fatalf("rewriting the same body kept ETag %s", v1)
	}
	if _, err := st.Put(ctx, "k", []byte("one"), store.PutOptions{Condition: store.IfVersion(v1)}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("stale ETag: got %v, want ErrPreconditionFailed", err)
	}
	if _, err := st.Put(ctx, "missing", []byte("x"), store.PutOptions{Condition: store.IfVersion(v2)}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("if-match on a missing key: got %v, want ErrPreconditionFailed", err)
	}
	if _, err := st.Get(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get missing: got %v, want ErrNotFound", err)
	}
	if err := st.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "k"); err != nil {
		t.Fatalf("deleting a missing key: %v", err)
	}
}

// TestMetadataNamesOnTheWire checks celld's naming: litestream-timestamp is
// stored as litestream_timestamp, visible to any Azure client.
func TestMetadataNamesOnTheWire(t *testing.T) {
	ctx := t.Context()
	opts := serverOptions(t)
	raw, err := azure.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	key := "test-" + randomHex(8) + "/ltx"
	if _, err := raw.Put(ctx, key, []byte("x"), store.PutOptions{Metadata: map[string]string{"litestream-timestamp": "t"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Delete(context.Background(), key) })
	props, err := raw.Client().NewBlobClient(key).GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for k, v := range props.Metadata {
		if (k == "litestream_timestamp" || k == "Litestream_timestamp") && v != nil && *v == "t" {
			found = true
		}
	}
	if !found {
		t.Fatalf("stored metadata = %v, want litestream_timestamp", props.Metadata)
	}
}

func TestRaces(t *testing.T) {
	ctx := t.Context()
	st := openServer(t, nil)
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
		t.Fatalf("if-match race: %d winners", n)
	}
}

// TestBlockListConditional checks that a write large enough to go in
// blocks keeps its condition (checked at Put Block List), and that
// concurrent large writers of one key never mix their blocks.
func TestBlockListConditional(t *testing.T) {
	ctx := t.Context()
	st := openServer(t, func(o *azure.Options) {
		o.BlockSize = 1 << 20
		o.BlockThreshold = 1 << 20
	})
	big := func(tag string) []byte {
		b := bytes.Repeat([]byte(tag), (3<<20+17)/len(tag)+1)
		return b[:3<<20+17]
	}
	v1, err := st.Put(ctx, "big", big("first-"), store.PutOptions{Condition: store.IfAbsent, Metadata: map[string]string{"kind": "ltx"}})
	if err != nil {
		t.Fatalf("block create-only: %v", err)
	}
	if _, err := st.Put(ctx, "big", big("second-"), store.PutOptions{Condition: store.IfAbsent}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("block create-only on an existing key: got %v, want ErrPreconditionFailed", err)
	}
	if _, err := st.Put(ctx, "big", big("third-"), store.PutOptions{Condition: store.IfVersion(`"0x0"`)}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("block if-match stale: got %v, want ErrPreconditionFailed", err)
	}
	got, err := st.Get(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != v1 || !bytes.Equal(got.Data, big("first-")) || got.Metadata["kind"] != "ltx" {
		t.Fatalf("after rejected block writes: version %s (want %s), %d bytes, metadata %v", got.Version, v1, len(got.Data), got.Metadata)
	}
	// Racing large compare-and-swaps: one wins, and its bytes are whole.
	var wg sync.WaitGroup
	var winners atomic.Int32
	bodies := make([][]byte, 4)
	for i := range bodies {
		bodies[i] = big(fmt.Sprintf("writer-%d-", i))
		wg.Go(func() {
			_, err := st.Put(ctx, "big", bodies[i], store.PutOptions{Condition: store.IfVersion(v1)})
			switch {
			case err == nil:
				winners.Add(1)
			case !errors.Is(err, store.ErrPreconditionFailed):
				t.Errorf("writer %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if n := winners.Load(); n != 1 {
		t.Fatalf("%d winners", n)
	}
	got, err = st.Get(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	whole := false
	for _, b := range bodies {
		whole = whole || bytes.Equal(got.Data, b)
	}
	if !whole {
		t.Fatalf("the blob mixes the writers' blocks")
	}
}

// fakeAzure answers every request with the given status and error code
// and counts requests.
type fakeAzure struct {
	status   int
	code     string
	noETag   bool
	requests atomic.Int32
	// gate, when set, holds every answer until it is closed.
	gate chan struct{}
}

func (f *fakeAzure) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	f.requests.Add(1)
	if f.gate != nil {
		<-f.gate
	}
	if f.status == http.StatusCreated {
		if !f.noETag {
			w.Header().Set("ETag", `"0x8D0000000000001"`)
		}
		w.WriteHeader(http.StatusCreated)
		return
	}
	w.Header().Set("x-ms-error-code", f.code)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(f.status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>%s</Code><Message>fake</Message></Error>`, f.code)
}

func openFake(t *testing.T, f *fakeAzure, tweak ...func(*azure.Options)) store.Store {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	opts := azure.Options{
		Container: "c", ServiceURL: srv.URL + "/acct", Account: "acct",
		AccountKey: base64.StdEncoding.EncodeToString([]byte("not a real key")),
		ClientOptions: &container.ClientOptions{ClientOptions: policy.ClientOptions{
			Retry: policy.RetryOptions{RetryDelay: time.Millisecond, MaxRetryDelay: time.Millisecond},
		}},
	}
	for _, tw := range tweak {
		tw(&opts)
	}
	st, err := azure.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestErrorClassification(t *testing.T) {
	cases := []struct {
		name         string
		fake         fakeAzure
		cond         store.Condition
		want         error
		wantRequests int32 // 0: more than one (the SDK retried)
	}{
		{"412 ConditionNotMet", fakeAzure{status: 412, code: "ConditionNotMet"}, store.IfVersion(`"x"`), store.ErrPreconditionFailed, 1},
		{"409 BlobAlreadyExists", fakeAzure{status: 409, code: "BlobAlreadyExists"}, store.IfAbsent, store.ErrPreconditionFailed, 1},
		{"404 BlobNotFound on if-match", fakeAzure{status: 404, code: "BlobNotFound"}, store.IfVersion(`"x"`), store.ErrPreconditionFailed, 1},
		{"404 ContainerNotFound on if-match is a definite refusal", fakeAzure{status: 404, code: "ContainerNotFound"}, store.IfVersion(`"x"`), store.ErrBucketNotFound, 1},
		{"403 on create-only is a definite refusal", fakeAzure{status: 403, code: "AuthenticationFailed"}, store.IfAbsent, store.ErrAccessDenied, 1},
		{"409 LeaseIdMissing is ambiguous", fakeAzure{status: 409, code: "LeaseIdMissing"}, store.IfAbsent, store.ErrAmbiguous, 1},
		{"500 on create-only is ambiguous and not retried", fakeAzure{status: 500, code: "InternalError"}, store.IfAbsent, store.ErrAmbiguous, 1},
		{"503 on if-match is ambiguous and not retried", fakeAzure{status: 503, code: "ServerBusy"}, store.IfVersion(`"x"`), store.ErrAmbiguous, 1},
		{"500 on a plain put is retried, then ambiguous", fakeAzure{status: 500, code: "InternalError"}, store.Condition{}, store.ErrAmbiguous, 0},
		{"403 on a plain put is a definite refusal", fakeAzure{status: 403, code: "AuthorizationFailure"}, store.Condition{}, store.ErrAccessDenied, 1},
		{"no ETag on success is ambiguous", fakeAzure{status: 201, noETag: true}, store.IfAbsent, store.ErrAmbiguous, 1},
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
			n := c.fake.requests.Load()
			if c.wantRequests == 0 && n < 2 || c.wantRequests != 0 && n != c.wantRequests {
				t.Fatalf("server saw %d requests, want %d (0 = retried)", n, c.wantRequests)
			}
		})
	}
}

func TestGetClassification(t *testing.T) {
	if _, err := openFake(t, &fakeAzure{status: 404, code: "BlobNotFound"}).Get(t.Context(), "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("BlobNotFound: got %v, want ErrNotFound", err)
	}
	if _, err := openFake(t, &fakeAzure{status: 404, code: "ContainerNotFound"}).Get(t.Context(), "k"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ContainerNotFound: got %v, want an error that is not ErrNotFound", err)
	}
	// A missing blob is deleted already; a missing container is not.
	if err := openFake(t, &fakeAzure{status: 404, code: "BlobNotFound"}).Delete(t.Context(), "k"); err != nil {
		t.Fatalf("delete, BlobNotFound: %v", err)
	}
	if err := openFake(t, &fakeAzure{status: 404, code: "ContainerNotFound"}).Delete(t.Context(), "k"); !errors.Is(err, store.ErrBucketNotFound) {
		t.Fatalf("delete, ContainerNotFound: got %v, want ErrBucketNotFound", err)
	}
}

func TestOptionsChecked(t *testing.T) {
	ctx := t.Context()
	key := base64.StdEncoding.EncodeToString([]byte("k"))
	for _, o := range []azure.Options{
		{},
		{Container: "c"},
		{Container: "c", AccountKey: key},
		{Container: "c", Account: "a", AccountKey: key, ConnectionString: "x"},
		{Container: "c", ConnectionString: "x", ServiceURL: "http://h/"},
		{Container: "c", ServiceURL: "ftp://h/"},
		{Container: "c", Account: "a", AccountKey: key, BlockSize: 8 << 20, BlockThreshold: 1 << 20},
	} {
		if _, err := azure.New(ctx, o); err == nil {
			t.Errorf("New(%+v) accepted bad options", o)
		}
	}
}

// On Azurite a wrong key and a missing container are definite refusals
// for every operation, on one short line naming what to check.
func TestRefusalsOnTheServer(t *testing.T) {
	for _, c := range []struct {
		name  string
		tweak func(*azure.Options)
		kind  error
		hint  string
	}{
		{"wrong key", func(o *azure.Options) {
			o.AccountKey = base64.StdEncoding.EncodeToString([]byte("not the account's key, not at all"))
		}, store.ErrAccessDenied, "AZURE_STORAGE_KEY"},
		{"missing container", func(o *azure.Options) { o.Container = "no-such-container-" + randomHex(4) }, store.ErrBucketNotFound, "container's name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := serverOptions(t)
			c.tweak(&opts)
			st, err := azure.New(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close(st)
			ctx := t.Context()
			_, perr := st.Put(ctx, "k", []byte("x"), store.PutOptions{Condition: store.IfAbsent})
			_, gerr := st.Get(ctx, "k")
			_, lerr := st.List(ctx, store.ListOptions{})
			for op, err := range map[string]error{"put": perr, "get": gerr, "list": lerr} {
				switch {
				case !errors.Is(err, c.kind):
					t.Errorf("%s: %v, want %v", op, err, c.kind)
				case store.IsAmbiguous(err) || store.IsNotFound(err):
					t.Errorf("%s: %v is ambiguous or not-found", op, err)
				case !strings.Contains(err.Error(), c.hint) || len(err.Error()) > 300:
					t.Errorf("%s: message %q: want one line under 300 characters naming %q", op, err, c.hint)
				}
			}
		})
	}
}

// serversRequired reports whether a missing emulator must fail the test
// rather than skip it: under CI=true, and inside .ci/run, which starts every
// emulator and sets CELLB_CI_REQUIRE_EMULATORS=1 (docs/testing.md).
func serversRequired() bool {
	return os.Getenv("CI") == "true" || os.Getenv("CELLB_CI_REQUIRE_EMULATORS") == "1"
}
