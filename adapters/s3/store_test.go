package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cellb/cellb/adapters/s3"
	"github.com/cellb/cellb/core/store"
)

// serverOptions returns Options for the S3 server the CI scripts start
// (.ci/servers/versitygw.sh). Outside CI a missing server skips the test;
// in CI it fails it, so a broken script cannot pass silently.
func serverOptions(t testing.TB) s3.Options {
	t.Helper()
	endpoint := os.Getenv("CELLB_TEST_S3_ENDPOINT")
	if endpoint == "" {
		if serversRequired() {
			t.Fatal("CELLB_TEST_S3_ENDPOINT is not set, but the emulators are required (CI=true or CELLB_CI_REQUIRE_EMULATORS=1): .ci/servers/versitygw.sh should have started a server")
		}
		t.Skip("CELLB_TEST_S3_ENDPOINT is not set; start a server with: bash .ci/servers/versitygw.sh start /tmp/s3 && source /tmp/s3/env")
	}
	return s3.Options{
		Bucket:       os.Getenv("CELLB_TEST_S3_BUCKET"),
		Endpoint:     endpoint,
		Region:       os.Getenv("CELLB_TEST_S3_REGION"),
		UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(
			os.Getenv("CELLB_TEST_S3_ACCESS_KEY"), os.Getenv("CELLB_TEST_S3_SECRET_KEY"), ""),
	}
}

// openServer opens a Store on the test server under a fresh prefix, and
// removes everything under it when the test ends.
func openServer(t testing.TB, tweak func(*s3.Options)) store.Store {
	t.Helper()
	st, _, _ := openServerRaw(t, tweak)
	return st
}

// openServerRaw is openServer that also returns the unprefixed Store and
// the prefix, for checks through the S3 client itself.
func openServerRaw(t testing.TB, tweak func(*s3.Options)) (store.Store, *s3.Store, string) {
	t.Helper()
	opts := serverOptions(t)
	if tweak != nil {
		tweak(&opts)
	}
	raw, err := s3.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "test-" + randomHex(8)
	st, err := store.WithPrefix(raw, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAll(t, st) })
	return st, raw, prefix + "/"
}

func removeAll(t testing.TB, st store.Store) {
	ctx := context.Background()
	all, err := store.ListAll(ctx, st, store.ListOptions{})
	if err != nil {
		t.Errorf("cleanup: list: %v", err)
		return
	}
	for _, o := range all.Objects {
		if err := st.Delete(ctx, o.Key); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
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
	if v1 == "" {
		t.Fatal("create-only returned an empty version")
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
	v2, err := st.Put(ctx, "k", []byte("two"), store.PutOptions{Condition: store.IfVersion(v1)})
	if err != nil {
		t.Fatalf("if-match current version: %v", err)
	}
	if v2 == v1 {
		t.Fatalf("new body kept version %s", v1)
	}
	if _, err := st.Put(ctx, "k", []byte("three"), store.PutOptions{Condition: store.IfVersion(v1)}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("if-match stale version: got %v, want ErrPreconditionFailed", err)
	}
	if _, err := st.Put(ctx, "missing", []byte("x"), store.PutOptions{Condition: store.IfVersion(v2)}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("if-match on a missing key: got %v, want ErrPreconditionFailed", err)
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
// wins, for create-only and for compare-and-swap. Every body is unique, so
// the ETag trap (equal bodies, equal ETags) cannot hide a second winner.
func TestRaces(t *testing.T) {
	ctx := t.Context()
	st := openServer(t, nil)
	const writers = 8
	race := func(cond store.Condition) (winners int, v store.Version) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range writers {
			wg.Go(func() {
				ver, err := st.Put(ctx, "race", []byte(fmt.Sprintf("writer %d %s", i, randomHex(4))), store.PutOptions{Condition: cond})
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
		t.Fatalf("compare-and-swap race: %d winners", n)
	}
}

// TestMultipartConditional checks that a conditional write large enough to
// go in parts keeps its condition (checked at CompleteMultipartUpload).
func TestMultipartConditional(t *testing.T) {
	ctx := t.Context()
	st, raw, prefix := openServerRaw(t, func(o *s3.Options) {
		o.PartSize = 5 << 20
		o.MultipartThreshold = 5 << 20
	})
	big := func(tag string) []byte {
		b := bytes.Repeat([]byte(tag), (11<<20)/len(tag)+1)
		return b[:11<<20]
	}
	v1, err := st.Put(ctx, "big", big("first-"), store.PutOptions{Condition: store.IfAbsent, Metadata: map[string]string{"kind": "ltx"}})
	if err != nil {
		t.Fatalf("multipart create-only: %v", err)
	}
	if _, err := st.Put(ctx, "big", big("second-"), store.PutOptions{Condition: store.IfAbsent}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("multipart create-only on an existing key: got %v, want ErrPreconditionFailed", err)
	}
	v2, err := st.Put(ctx, "big", big("third-"), store.PutOptions{Condition: store.IfVersion(v1)})
	if err != nil {
		t.Fatalf("multipart if-match current: %v", err)
	}
	if _, err := st.Put(ctx, "big", big("fourth-"), store.PutOptions{Condition: store.IfVersion(v1)}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("multipart if-match stale: got %v, want ErrPreconditionFailed", err)
	}
	got, err := st.Get(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != v2 || !bytes.Equal(got.Data, big("third-")) || got.Metadata["kind"] != "" {
		t.Fatalf("after multipart writes: version %s (want %s), %d bytes, metadata %v", got.Version, v2, len(got.Data), got.Metadata)
	}
	// The rejected uploads were aborted: no parts are left behind.
	ups, err := raw.Client().ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{
		Bucket: aws.String(os.Getenv("CELLB_TEST_S3_BUCKET")), Prefix: aws.String(prefix),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 0 {
		t.Fatalf("%d multipart uploads left behind, e.g. %s", len(ups.Uploads), aws.ToString(ups.Uploads[0].Key))
	}
}

// fakeS3 answers every request with the given status and counts requests,
// to check how failures are classified and that conditional writes are
// sent exactly once.
type fakeS3 struct {
	status   int
	code     string
	noETag   bool
	requests atomic.Int32
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	if f.status == http.StatusOK {
		if !f.noETag {
			w.Header().Set("ETag", `"0123"`)
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(f.status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>fake</Message></Error>`, f.code)
}

func openFake(t *testing.T, f *fakeS3) store.Store {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	st, err := s3.New(t.Context(), s3.Options{
		Bucket: "b", Endpoint: srv.URL, Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestErrorClassification(t *testing.T) {
	cases := []struct {
		name         string
		fake         fakeS3
		cond         store.Condition
		want         error
		wantRequests int32 // 0: more than one (the SDK retried)
	}{
		{"412 on create-only", fakeS3{status: 412, code: "PreconditionFailed"}, store.IfAbsent, store.ErrPreconditionFailed, 1},
		{"412 on if-match", fakeS3{status: 412, code: "PreconditionFailed"}, store.IfVersion(`"x"`), store.ErrPreconditionFailed, 1},
		{"409 conditional conflict", fakeS3{status: 409, code: "ConditionalRequestConflict"}, store.IfVersion(`"x"`), store.ErrPreconditionFailed, 1},
		{"404 NoSuchKey on if-match", fakeS3{status: 404, code: "NoSuchKey"}, store.IfVersion(`"x"`), store.ErrPreconditionFailed, 1},
		{"404 NoSuchBucket on if-match is a definite refusal", fakeS3{status: 404, code: "NoSuchBucket"}, store.IfVersion(`"x"`), store.ErrBucketNotFound, 1},
		{"403 on create-only is a definite refusal", fakeS3{status: 403, code: "SignatureDoesNotMatch"}, store.IfAbsent, store.ErrAccessDenied, 1},
		{"401 on if-match is a definite refusal", fakeS3{status: 401, code: "Unauthorized"}, store.IfVersion(`"x"`), store.ErrAccessDenied, 1},
		{"500 on create-only is ambiguous and not retried", fakeS3{status: 500, code: "InternalError"}, store.IfAbsent, store.ErrAmbiguous, 1},
		{"503 on if-match is ambiguous and not retried", fakeS3{status: 503, code: "SlowDown"}, store.IfVersion(`"x"`), store.ErrAmbiguous, 1},
		{"other 409 on create-only is ambiguous", fakeS3{status: 409, code: "OperationAborted"}, store.IfAbsent, store.ErrAmbiguous, 1},
		{"500 on a plain put is retried, then ambiguous", fakeS3{status: 500, code: "InternalError"}, store.Condition{}, store.ErrAmbiguous, 0},
		{"403 on a plain put is a definite refusal", fakeS3{status: 403, code: "AccessDenied"}, store.Condition{}, store.ErrAccessDenied, 1},
		{"no ETag on success is ambiguous", fakeS3{status: 200, noETag: true}, store.IfAbsent, store.ErrAmbiguous, 1},
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

// TestMultipartFailureBeforeCompletion: a large put that fails before
// CompleteMultipartUpload changed nothing, so it is never ambiguous, and a
// refusal of its first request is the same definite refusal as a small
// put's.
func TestMultipartFailureBeforeCompletion(t *testing.T) {
	cases := []struct {
		status int
		code   string
		want   error
	}{
		{403, "AccessDenied", store.ErrAccessDenied},
		{404, "NoSuchBucket", store.ErrBucketNotFound},
		{500, "InternalError", nil},
	}
	for _, c := range cases {
		for _, cond := range []store.Condition{{}, store.IfAbsent} {
			t.Run(fmt.Sprintf("%d %s", c.status, cond), func(t *testing.T) {
				srv := httptest.NewServer(&fakeS3{status: c.status, code: c.code})
				t.Cleanup(srv.Close)
				st, err := s3.New(t.Context(), s3.Options{
					Bucket: "b", Endpoint: srv.URL, Region: "us-east-1", UsePathStyle: true,
					Credentials:        credentials.NewStaticCredentialsProvider("a", "b", ""),
					PartSize:           5 << 20,
					MultipartThreshold: 5 << 20,
				})
				if err != nil {
					t.Fatal(err)
				}
				_, err = st.Put(t.Context(), "k", make([]byte, 6<<20), store.PutOptions{Condition: cond})
				switch {
				case err == nil:
					t.Fatal("Put succeeded")
				case store.IsAmbiguous(err):
					t.Fatalf("%v is ambiguous, though no upload was completed", err)
				case c.want != nil && !errors.Is(err, c.want):
					t.Fatalf("err = %v, want %v", err, c.want)
				case c.want == nil && store.IsRefused(err):
					t.Fatalf("err = %v is a refusal", err)
				}
			})
		}
	}
}

// TestCopyTooLarge: an object of more than 10,000 copy parts is
// ErrCopyTooLarge, not ambiguous, and no destination appears.
func TestCopyTooLarge(t *testing.T) {
	defer s3.SetCopyPartSize(1)()
	ctx := t.Context()
	st := openServer(t, nil)
	if _, err := st.Put(ctx, "src", make([]byte, 10001), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := store.Copy(ctx, st, "src", "dst")
	if !errors.Is(err, store.ErrCopyTooLarge) || store.IsAmbiguous(err) {
		t.Fatalf("copy of 10,001 one-byte parts: %v, want ErrCopyTooLarge and not ambiguous", err)
	}
	if _, err := st.Get(ctx, "dst"); !store.IsNotFound(err) {
		t.Fatalf("the refused copy left a destination (get: %v)", err)
	}
}

func TestGetClassification(t *testing.T) {
	f := &fakeS3{status: 404, code: "NoSuchKey"}
	if _, err := openFake(t, f).Get(t.Context(), "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("NoSuchKey: got %v, want ErrNotFound", err)
	}
	f = &fakeS3{status: 404, code: "NoSuchBucket"}
	if _, err := openFake(t, f).Get(t.Context(), "k"); !errors.Is(err, store.ErrBucketNotFound) || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("NoSuchBucket: got %v, want ErrBucketNotFound and not ErrNotFound", err)
	}
	f = &fakeS3{status: 403, code: "AccessDenied"}
	if _, err := openFake(t, f).Get(t.Context(), "k"); !errors.Is(err, store.ErrAccessDenied) {
		t.Fatalf("403: got %v, want ErrAccessDenied", err)
	}
}

// On a real server a wrong secret and a missing bucket are definite
// refusals on one short line naming what to check, for every operation.
func TestRefusalsOnTheServer(t *testing.T) {
	for _, c := range []struct {
		name  string
		tweak func(*s3.Options)
		kind  error
		hint  string
	}{
		{"wrong secret", func(o *s3.Options) {
			o.Credentials = credentials.NewStaticCredentialsProvider(os.Getenv("CELLB_TEST_S3_ACCESS_KEY"), "not-the-secret", "")
		}, store.ErrAccessDenied, "AWS_SECRET_ACCESS_KEY"},
		{"missing bucket", func(o *s3.Options) { o.Bucket = "no-such-bucket-" + randomHex(4) }, store.ErrBucketNotFound, "bucket's name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := serverOptions(t)
			c.tweak(&opts)
			st, err := s3.New(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			_, perr := st.Put(ctx, "k", []byte("x"), store.PutOptions{Condition: store.IfAbsent})
			_, gerr := st.Get(ctx, "k")
			_, lerr := st.List(ctx, store.ListOptions{})
			derr := st.Delete(ctx, "k")
			for op, err := range map[string]error{"put": perr, "get": gerr, "list": lerr, "delete": derr} {
				switch {
				case !errors.Is(err, c.kind):
					t.Errorf("%s: %v, want %v", op, err, c.kind)
				case store.IsAmbiguous(err) || store.IsNotFound(err):
					t.Errorf("%s: %v is ambiguous or not-found", op, err)
				case !strings.Contains(err.Error(), c.hint) || strings.Contains(err.Error(), "\n") || len(err.Error()) > 300:
					t.Errorf("%s: message %q: want one line under 300 characters naming %q", op, err, c.hint)
				}
			}
		})
	}
}

func TestRejectsBadInput(t *testing.T) {
	f := &fakeS3{status: 200}
	st := openFake(t, f)
	ctx := t.Context()
	if _, err := st.Put(ctx, "../x", []byte("b"), store.PutOptions{}); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("bad key: %v", err)
	}
	if _, err := st.Put(ctx, "k", []byte("b"), store.PutOptions{Metadata: map[string]string{"Bad_Name": "v"}}); !errors.Is(err, store.ErrInvalidMetadata) {
		t.Fatalf("bad metadata: %v", err)
	}
	if _, err := st.Put(ctx, "k", []byte("b"), store.PutOptions{Condition: store.IfVersion("")}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("empty version: %v", err)
	}
	if n := f.requests.Load(); n != 0 {
		t.Fatalf("bad input reached the server %d times", n)
	}
}

func TestOptionsChecked(t *testing.T) {
	ctx := t.Context()
	for _, o := range []s3.Options{
		{},
		{Bucket: "b", PartSize: 1 << 20},
		{Bucket: "b", PartSize: 8 << 20, MultipartThreshold: 6 << 20},
	} {
		if _, err := s3.New(ctx, o); err == nil {
			t.Errorf("New(%+v) accepted bad options", o)
		}
	}
}

// serversRequired reports whether a missing emulator must fail the test
// rather than skip it: under CI=true, and inside .ci/run, which starts every
// emulator and sets CELLB_CI_REQUIRE_EMULATORS=1 (docs/testing.md).
func serversRequired() bool {
	return os.Getenv("CI") == "true" || os.Getenv("CELLB_CI_REQUIRE_EMULATORS") == "1"
}
