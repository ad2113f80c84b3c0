package store_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/cellb/cellb/core/store"
)

// The errors a fakeDriver returns, and the kinds its Classify gives them.
var (
	errTransient = errors.New("fake: 503 slow down")
	errUnknown   = errors.New("fake: connection reset after the request")
	errMissing   = errors.New("fake: 404 NoSuchKey")
	errRejected  = errors.New("fake: 400 bad request")
	errCondition = errors.New("fake: 412 precondition failed")
	errDenied    = errors.New("fake: 403 SignatureDoesNotMatch\nwith a second line the message must not carry")
	errNoBucket  = errors.New("fake: 404 NoSuchBucket")
	errBoom      = errors.New("the caller's reader failed")
)

var fakeClasses = map[error]store.ErrorClass{
	errTransient: {Kind: store.KindTransient, Status: 503},
	errUnknown:   {Kind: store.KindUnknown},
	errMissing:   {Kind: store.KindNotFound, Status: 404},
	errRejected:  {Kind: store.KindRejected, Status: 400},
	errCondition: {Kind: store.KindPreconditionFailed, Status: 412},
	errDenied:    {Kind: store.KindAccessDenied, Status: 403, Code: "SignatureDoesNotMatch", Hint: "check FAKE_ACCESS_KEY and FAKE_SECRET_KEY"},
	errNoBucket:  {Kind: store.KindBucketNotFound, Status: 404, Code: "NoSuchBucket", Hint: "check FAKE_BUCKET"},
}

// fakeDriver is a scripted store.Driver: it holds objects in a map,
// records every call the Bucket makes, and fails calls as the test says.
// A put reads as much of its body as bodyRead says (-1: all of it) before
// it answers.
type fakeDriver struct {
	mu      sync.Mutex
	objects map[string]*store.Object
	calls   []string
	n       int

	// getErrs, listErrs and delErrs fail the next calls, one error each.
	getErrs, listErrs, delErrs []error
	// putErr fails puts after bodyRead bytes of the body were read.
	putErr   error
	bodyRead int64
	// swallow makes a put ignore its body's error and publish what it
	// read (a broken SDK).
	swallow bool
	// putVersion, when set, replaces the version a put returns ("-" for
	// an empty one).
	putVersion store.Version
	// body, when set, replaces the body of every reader (a short or long
	// stream against the announced Size).
	body    []byte
	copyErr error
	// copyVersion, when set, replaces the version a copy returns ("-"
	// for an empty one).
	copyVersion store.Version
	lastList    store.ListOptions
	lastPut     store.PutOptions
}

func newFake() *fakeDriver {
	return &fakeDriver{objects: map[string]*store.Object{}, bodyRead: -1}
}

func (d *fakeDriver) record(call string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, call)
}

func next(errs *[]error) error {
	if len(*errs) == 0 {
		return nil
	}
	err := (*errs)[0]
	*errs = (*errs)[1:]
	return err
}

func (d *fakeDriver) NewRangeReader(_ context.Context, key string, offset, length int64, dataOnly bool) (*store.Reader, error) {
	d.record("get " + key)
	if err := next(&d.getErrs); err != nil {
		return nil, err
	}
	o, ok := d.objects[key]
	if !ok {
		return nil, errMissing
	}
	body := o.Data
	if d.body != nil {
		body = d.body
	}
	if offset > int64(len(body)) {
		offset = int64(len(body))
	}
	r := &store.Reader{Version: o.Version, Size: int64(len(o.Data)), Metadata: o.Metadata, Headers: o.Headers,
		Body: io.NopCloser(bytes.NewReader(body[offset:]))}
	if dataOnly {
		r.Metadata, r.Headers = nil, store.ContentHeaders{}
	}
	return r, nil
}

func (d *fakeDriver) PutFrom(_ context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	d.record("put " + key)
	d.lastPut = opts
	var data []byte
	var err error
	if d.bodyRead < 0 {
		data, err = io.ReadAll(r)
	} else {
		data = make([]byte, d.bodyRead)
		_, err = io.ReadFull(r, data)
	}
	if err != nil && !d.swallow {
		return "", err
	}
	if d.putErr != nil {
		return "", d.putErr
	}
	d.n++
	v := store.Version("v" + strings.Repeat("i", d.n))
	switch d.putVersion {
	case "":
	case "-":
		v = ""
	default:
		v = d.putVersion
	}
	d.objects[key] = &store.Object{Key: key, Data: data, Version: v, Metadata: opts.Metadata, Headers: opts.Headers}
	return v, nil
}

func (d *fakeDriver) Delete(_ context.Context, key string) error {
	d.record("delete " + key)
	if err := next(&d.delErrs); err != nil {
		return err
	}
	delete(d.objects, key)
	return nil
}

func (d *fakeDriver) List(_ context.Context, opts store.ListOptions) (store.ListPage, error) {
	d.record("list " + opts.Prefix)
	d.lastList = opts
	if err := next(&d.listErrs); err != nil {
		return store.ListPage{}, err
	}
	return store.ListPage{}, nil
}

func (d *fakeDriver) Copy(_ context.Context, src, dst string) (store.Version, error) {
	d.record("copy " + src + " " + dst)
	if d.copyErr != nil {
		return "", d.copyErr
	}
	o, ok := d.objects[src]
	if !ok {
		return "", errMissing
	}
	v := store.Version("c1")
	switch d.copyVersion {
	case "":
	case "-":
		v = ""
	default:
		v = d.copyVersion
	}
	d.objects[dst] = &store.Object{Key: dst, Data: o.Data, Version: v, Metadata: o.Metadata, Headers: o.Headers}
	return v, nil
}

func (d *fakeDriver) Classify(err error) store.ErrorClass {
	for e, c := range fakeClasses {
		if errors.Is(err, e) {
			return c
		}
	}
	return store.ErrorClass{}
}

func (d *fakeDriver) Close() error { return nil }

func (d *fakeDriver) seed(key, data string) {
	d.objects[key] = &store.Object{Key: key, Data: []byte(data), Version: "v0", Metadata: map[string]string{"m": "1"}, Headers: store.ContentHeaders{ContentType: "text/plain"}}
}

// TestBucketSendsNothingForBadArguments: every argument the Bucket
// validates fails before the driver is called.
func TestBucketSendsNothingForBadArguments(t *testing.T) {
	ctx := t.Context()
	d := newFake()
	b := store.NewBucket(d)
	badMeta := store.PutOptions{Metadata: map[string]string{"Upper": "x"}}
	badHeaders := store.PutOptions{Headers: store.ContentHeaders{ContentType: " spaced"}}
	emptyMatch := store.PutOptions{Condition: store.IfVersion("")}
	calls := []struct {
		name string
		want error
		call func() error
	}{
		{"get", store.ErrInvalidKey, func() error { _, err := b.Get(ctx, "a//b"); return err }},
		{"get data", store.ErrInvalidKey, func() error { _, err := b.GetData(ctx, "/abs"); return err }},
		{"range", store.ErrInvalidKey, func() error { _, err := b.NewRangeReader(ctx, "a/../b", 0, -1); return err }},
		{"put", store.ErrInvalidKey, func() error { _, err := b.Put(ctx, "", nil, store.PutOptions{}); return err }},
		{"put from", store.ErrInvalidKey, func() error {
			_, err := b.PutFrom(ctx, "a\\b", strings.NewReader("x"), 1, store.PutOptions{})
			return err
		}},
		{"delete", store.ErrInvalidKey, func() error { return b.Delete(ctx, "a/./b") }},
		{"copy src", store.ErrInvalidKey, func() error { _, err := b.Copy(ctx, "a//", "b"); return err }},
		{"copy dst", store.ErrInvalidKey, func() error { _, err := b.Copy(ctx, "a", "b//"); return err }},
		{"list prefix", store.ErrInvalidKey, func() error { _, err := b.List(ctx, store.ListOptions{Prefix: "a//"}); return err }},
		{"metadata", store.ErrInvalidMetadata, func() error { _, err := b.Put(ctx, "k", nil, badMeta); return err }},
		{"headers", store.ErrInvalidHeaders, func() error { _, err := b.Put(ctx, "k", nil, badHeaders); return err }},
		{"empty if-match version", store.ErrPreconditionFailed, func() error { _, err := b.Put(ctx, "k", nil, emptyMatch); return err }},
		{"unknown condition", nil, func() error {
			_, err := b.Put(ctx, "k", nil, store.PutOptions{Condition: store.Condition{Kind: 99}})
			return err
		}},
	}
	for _, c := range calls {
		err := c.call()
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if store.IsAmbiguous(err) {
			t.Errorf("%s: a call that sent nothing is ambiguous: %v", c.name, err)
		}
	}
	if len(d.calls) != 0 {
		t.Fatalf("the driver was called for bad arguments: %v", d.calls)
	}
}

// TestBucketClampsListLimit: the driver is asked for 1..1000 entries.
func TestBucketClampsListLimit(t *testing.T) {
	for _, c := range []struct{ limit, want int }{{0, 1000}, {-1, 1000}, {5000, 1000}, {1001, 1000}, {1000, 1000}, {7, 7}, {1, 1}} {
		d := newFake()
		if _, err := store.NewBucket(d).List(t.Context(), store.ListOptions{Prefix: "p/", Limit: c.limit}); err != nil {
			t.Fatal(err)
		}
		if d.lastList.Limit != c.want || d.lastList.Prefix != "p/" {
			t.Errorf("limit %d: the driver was asked for %d (prefix %q), want %d", c.limit, d.lastList.Limit, d.lastList.Prefix, c.want)
		}
	}
}

func readAll(t *testing.T, b *store.Bucket, key string, offset, length int64) (*store.Reader, []byte, error) {
	t.Helper()
	r, err := b.NewRangeReader(t.Context(), key, offset, length)
	if err != nil {
		t.Fatalf("open %s at %d: %v", key, offset, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	return r, data, err
}

// TestBucketRanges: a negative offset is refused before the driver is
// called, one past the end after; the reader delivers exactly its Length.
func TestBucketRanges(t *testing.T) {
	ctx := t.Context()
	d := newFake()
	d.seed("k", "0123456789")
	b := store.NewBucket(d)

	if _, err := b.NewRangeReader(ctx, "k", -1, 2); !errors.Is(err, store.ErrInvalidRange) {
		t.Fatalf("offset -1: %v", err)
	}
	if len(d.calls) != 0 {
		t.Fatalf("a negative offset was sent: %v", d.calls)
	}
	if _, err := b.NewRangeReader(ctx, "k", 11, 2); !errors.Is(err, store.ErrInvalidRange) {
		t.Fatalf("offset past the end: %v", err)
	}

	r, data, err := readAll(t, b, "k", 3, 4)
	if err != nil || string(data) != "3456" || r.Offset != 3 || r.Length != 4 || r.Size != 10 || r.Key != "k" {
		t.Fatalf("range 3+4: %q, %v, reader %+v", data, err, r)
	}
	if r, data, err := readAll(t, b, "k", 8, 100); err != nil || string(data) != "89" || r.Length != 2 {
		t.Fatalf("range past the end: %q, %v, length %d", data, err, r.Length)
	}
	if r, data, err := readAll(t, b, "k", 10, -1); err != nil || len(data) != 0 || r.Length != 0 {
		t.Fatalf("range at the end: %q, %v, length %d", data, err, r.Length)
	}

	// A body shorter than the announced Length fails instead of ending.
	d.body = []byte("012345")
	if _, data, err := readAll(t, b, "k", 0, -1); !errors.Is(err, store.ErrShortBody) || len(data) != 6 {
		t.Fatalf("short body: %d bytes, %v; want 6 then ErrShortBody", len(data), err)
	}
	if _, err := b.Get(ctx, "k"); !errors.Is(err, store.ErrShortBody) {
		t.Fatalf("Get of a short body: %v", err)
	}
	// A body longer than announced is cut at the Length.
	d.body = []byte("0123456789ABCDEF")
	if _, data, err := readAll(t, b, "k", 0, -1); err != nil || string(data) != "0123456789" {
		t.Fatalf("long body: %q, %v", data, err)
	}
	if o, err := b.Get(ctx, "k"); err != nil || string(o.Data) != "0123456789" {
		t.Fatalf("Get of a long body: %+v, %v", o, err)
	}

	// A reader without a version is no object the caller can swap on.
	d.body = nil
	d.objects["k"].Version = ""
	if _, err := b.Get(ctx, "k"); !errors.Is(err, store.ErrNoVersion) {
		t.Fatalf("a read without a version: %v", err)
	}
}

// TestBucketGetDataSkipsAttributes: GetData asks the driver for the body
// only; Get for everything.
func TestBucketGetDataSkipsAttributes(t *testing.T) {
	d := newFake()
	d.seed("k", "body")
	b := store.NewBucket(d)
	o, err := b.Get(t.Context(), "k")
	if err != nil || o.Metadata["m"] != "1" || o.Headers.ContentType != "text/plain" || string(o.Data) != "body" || o.Key != "k" {
		t.Fatalf("Get: %+v, %v", o, err)
	}
	o, err = b.GetData(t.Context(), "k")
	if err != nil || o.Metadata != nil || string(o.Data) != "body" || o.Version != "v0" {
		t.Fatalf("GetData: %+v, %v", o, err)
	}
}

// TestBucketRetriesATransientReadOnce: a read failing transiently is
// tried exactly twice; any other failure once.
func TestBucketRetriesATransientReadOnce(t *testing.T) {
	ctx := t.Context()
	reads := map[string]func(b *store.Bucket, d *fakeDriver, errs []error) error{
		"get": func(b *store.Bucket, d *fakeDriver, errs []error) error {
			d.getErrs = errs
			_, err := b.Get(ctx, "k")
			return err
		},
		"list": func(b *store.Bucket, d *fakeDriver, errs []error) error {
			d.listErrs = errs
			_, err := b.List(ctx, store.ListOptions{})
			return err
		},
		"delete": func(b *store.Bucket, d *fakeDriver, errs []error) error {
			d.delErrs = errs
			return b.Delete(ctx, "k")
		},
	}
	for name, read := range reads {
		for _, c := range []struct {
			errs      []error
			wantCalls int
			wantErr   error
		}{
			{[]error{errTransient}, 2, nil},
			{[]error{errTransient, errTransient, errTransient}, 2, errTransient},
			{[]error{errUnknown}, 1, errUnknown},
			{[]error{errRejected}, 1, errRejected},
		} {
			d := newFake()
			d.seed("k", "x")
			err := read(store.NewBucket(d), d, c.errs)
			if len(d.calls) != c.wantCalls || !errors.Is(err, c.wantErr) && (c.wantErr != nil || err != nil) {
				t.Errorf("%s failing %v: %d calls, %v; want %d calls, %v", name, c.errs, len(d.calls), err, c.wantCalls, c.wantErr)
			}
			var oe *store.OpError
			if err != nil && !errors.As(err, &oe) {
				t.Errorf("%s: %T is no *store.OpError", name, err)
			}
		}
	}

	// A context that ended before the read sends nothing, and is not
	// worth a second try.
	d := newFake()
	d.getErrs = []error{errTransient, errTransient}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	b := store.NewBucket(d)
	if _, err := b.Get(cctx, "k"); !errors.Is(err, context.Canceled) || len(d.calls) != 0 {
		t.Fatalf("a cancelled read: %d calls, %v", len(d.calls), err)
	}
	if _, err := b.List(cctx, store.ListOptions{}); !errors.Is(err, context.Canceled) || len(d.calls) != 0 {
		t.Fatalf("a cancelled list: %d calls, %v", len(d.calls), err)
	}
	if err := b.Delete(cctx, "k"); !errors.Is(err, context.Canceled) || len(d.calls) != 0 {
		t.Fatalf("a cancelled delete: %d calls, %v", len(d.calls), err)
	}
}

// wholeDriver records what WholeBody gives its PutFrom.
type wholeDriver struct {
	*fakeDriver
	got   []byte
	whole bool
}

func (w *wholeDriver) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	w.got, w.whole = store.WholeBody(r)
	if !w.whole {
		data, err := io.ReadAll(r)
		if err != nil {
			return "", err
		}
		w.got = data
	}
	return "v1", nil
}

// TestBucketWholeBody: a Put hands the driver the caller's slice itself
// (no copy) and counts it as read; a streamed put does not.
func TestBucketWholeBody(t *testing.T) {
	ctx := t.Context()
	w := &wholeDriver{fakeDriver: newFake()}
	b := store.NewBucket(w)
	data := []byte("0123456789")
	if _, err := b.Put(ctx, "k", data, store.PutOptions{}); err != nil || !w.whole || &w.got[0] != &data[0] {
		t.Fatalf("Put: whole %v, same slice %v, %v", w.whole, len(w.got) > 0 && &w.got[0] == &data[0], err)
	}
	if _, err := b.PutFrom(ctx, "k", bytes.NewReader(data), 10, store.PutOptions{}); err != nil || w.whole || string(w.got) != string(data) {
		t.Fatalf("PutFrom: whole %v, %q, %v", w.whole, w.got, err)
	}
}

// TestBucketReadErrorsArePortable: the kinds Classify gives become the
// portable errors.
func TestBucketReadErrorsArePortable(t *testing.T) {
	ctx := t.Context()
	d := newFake()
	b := store.NewBucket(d)
	if _, err := b.Get(ctx, "missing"); !store.IsNotFound(err) || !errors.Is(err, errMissing) {
		t.Fatalf("missing key: %v", err)
	}
	d.listErrs = []error{errDenied}
	_, err := b.List(ctx, store.ListOptions{})
	var re *store.RefusedError
	if !errors.As(err, &re) || !errors.Is(err, store.ErrAccessDenied) || store.IsNotFound(err) {
		t.Fatalf("a refused list: %v", err)
	}
	d.getErrs = []error{errNoBucket}
	if _, err := b.Get(ctx, "k"); !errors.Is(err, store.ErrBucketNotFound) || store.IsNotFound(err) {
		t.Fatalf("a get in a missing bucket: %v", err)
	}
}

// failingReader gives n bytes, then fails with errBoom.
type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errBoom
	}
	k := min(len(p), f.n)
	for i := range k {
		p[i] = 'x'
	}
	f.n -= k
	return k, nil
}

// TestBucketWriteOutcomes: whether a failed write is ambiguous, definite,
// a failed condition or a refusal, from the driver's error, the write's
// condition and how much of the body had been read.
func TestBucketWriteOutcomes(t *testing.T) {
	const (
		ambiguous = "ambiguous"
		definite  = "definite"
		condition = "precondition failed"
		refused   = "refused"
		ok        = "ok"
		none      = -1 // the driver reads nothing of the body
	)
	body := []byte("0123456789")
	cases := []struct {
		name     string
		err      error // the driver's answer
		bodyRead int64 // how much of the body the driver reads first (0: all of it)
		cond     store.Condition
		version  store.Version // the version a success returns ("-": none)
		swallow  bool          // the driver ignores the body's error
		body     io.Reader     // the caller's body (default: body)
		size     int64         // its declared size (default: len(body))
		want     string
		wantIs   error
	}{
		{name: "success", want: ok},
		{name: "unknown after the body", err: errUnknown, want: ambiguous, wantIs: errUnknown},
		{name: "transient after the body", err: errTransient, want: ambiguous, wantIs: errTransient},
		{name: "unknown before the body's end", err: errUnknown, bodyRead: 4, want: definite, wantIs: errUnknown},
		{name: "transient before the body's end", err: errTransient, bodyRead: 4, want: definite, wantIs: errTransient},
		{name: "unknown with nothing read", err: errUnknown, bodyRead: none, want: definite, wantIs: errUnknown},
		{name: "the caller's body fails", body: &failingReader{n: 4}, size: -1, want: definite, wantIs: errBoom},
		{name: "a body shorter than declared", body: bytes.NewReader(body[:5]), size: 10, want: definite, wantIs: store.ErrBodySize},
		{name: "a body longer than declared", body: bytes.NewReader(body), size: 5, want: definite, wantIs: store.ErrBodySize},
		{name: "not found on an if-match put", err: errMissing, cond: store.IfVersion("v0"), want: condition, wantIs: errMissing},
		{name: "condition refused", err: errCondition, cond: store.IfAbsent, want: condition, wantIs: errCondition},
		{name: "condition refused, if-match", err: errCondition, cond: store.IfVersion("v0"), want: condition},
		{name: "rejected unconditional", err: errRejected, want: definite, wantIs: errRejected},
		{name: "rejected create-only", err: errRejected, cond: store.IfAbsent, want: ambiguous, wantIs: errRejected},
		{name: "rejected if-match", err: errRejected, cond: store.IfVersion("v0"), want: ambiguous},
		{name: "access denied", err: errDenied, want: refused, wantIs: store.ErrAccessDenied},
		{name: "access denied conditional", err: errDenied, cond: store.IfAbsent, want: refused, wantIs: store.ErrAccessDenied},
		{name: "access denied before the body's end", err: errDenied, bodyRead: 3, want: refused, wantIs: store.ErrAccessDenied},
		{name: "bucket not found", err: errNoBucket, want: refused, wantIs: store.ErrBucketNotFound},
		{name: "not applied, after the body", err: store.NotApplied("committing", errUnknown), want: definite, wantIs: errUnknown},
		{name: "not applied, conditional", err: store.NotApplied("committing", errRejected), cond: store.IfAbsent, want: definite, wantIs: errRejected},
		{name: "not applied keeps a refusal", err: store.NotApplied("starting", errDenied), cond: store.IfAbsent, want: refused, wantIs: store.ErrAccessDenied},
		{name: "not applied keeps a condition", err: store.NotApplied("", errCondition), cond: store.IfAbsent, want: condition, wantIs: errCondition},
		{name: "success without a version", version: "-", want: ambiguous, wantIs: store.ErrNoVersion},
		{name: "success without reading the body", bodyRead: 3, want: ambiguous},
		{name: "success reading exactly the declared size", bodyRead: 10, want: ok},
		{name: "the whole declared size, then the caller's body fails", body: io.MultiReader(bytes.NewReader(body), &failingReader{}), size: 10, want: definite, wantIs: errBoom},
		{name: "success after the caller's body failed", body: io.MultiReader(bytes.NewReader(body), &failingReader{}), size: 10, swallow: true, want: ambiguous},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newFake()
			d.putErr, d.putVersion, d.swallow = c.err, c.version, c.swallow
			switch c.bodyRead {
			case 0:
				d.bodyRead = -1
			case none:
				d.bodyRead = 0
			default:
				d.bodyRead = c.bodyRead
			}
			var r io.Reader = bytes.NewReader(body)
			size := int64(len(body))
			if c.body != nil {
				r, size = c.body, c.size
			}
			v, err := store.NewBucket(d).PutFrom(t.Context(), "k", r, size, store.PutOptions{Condition: c.cond})
			if len(d.calls) != 1 {
				t.Fatalf("%d driver calls (%v): a write is never retried", len(d.calls), d.calls)
			}
			var got string
			var re *store.RefusedError
			switch {
			case err == nil:
				got = ok
				if v == "" {
					t.Fatal("success with an empty version")
				}
			case store.IsAmbiguous(err):
				got = ambiguous
			case store.IsPreconditionFailed(err):
				got = condition
			case errors.As(err, &re):
				got = refused
				if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, re.Hint) || re.Hint == "" {
					t.Errorf("a refusal's message is not one line with the hint: %q", msg)
				}
				if store.IsRefused(err) != true || store.IsNotFound(err) {
					t.Errorf("refusal kinds: %v", err)
				}
			default:
				got = definite
			}
			if got != c.want {
				t.Fatalf("got %s (%v), want %s", got, err, c.want)
			}
			if c.wantIs != nil && !errors.Is(err, c.wantIs) {
				t.Fatalf("%v does not match %v", err, c.wantIs)
			}
			if c.body != nil && !c.swallow && !strings.Contains(err.Error(), "reading the body") {
				t.Fatalf("a failed body is not reported as one: %v", err)
			}
			var oe *store.OpError
			if err != nil && (!errors.As(err, &oe) || oe.Op != "put" || oe.Key != "k") {
				t.Fatalf("%v is not an *OpError of put k", err)
			}
		})
	}
}

// TestBucketCopy: a driver that cannot copy is copied by streaming, with
// src's metadata and headers and create-only on dst; a missing src is
// ErrNotFound; the other failures follow the write rules.
func TestBucketCopy(t *testing.T) {
	ctx := t.Context()
	d := newFake()
	d.seed("src", "body")
	b := store.NewBucket(d)
	if v, err := b.Copy(ctx, "src", "a"); err != nil || v != "c1" {
		t.Fatalf("copy: %q, %v", v, err)
	}

	d.copyErr = store.ErrCopyUnsupported
	d.calls = nil
	v, err := b.Copy(ctx, "src", "b")
	if err != nil || v == "" || string(d.objects["b"].Data) != "body" {
		t.Fatalf("copy by streaming: %q, %v", v, err)
	}
	if len(d.calls) != 3 || d.calls[1] != "get src" || d.calls[2] != "put b" {
		t.Fatalf("copy by streaming made %v", d.calls)
	}
	if p := d.lastPut; p.Condition != store.IfAbsent || p.Metadata["m"] != "1" || p.Headers.ContentType != "text/plain" {
		t.Fatalf("the streamed copy was put with %+v", p)
	}

	for _, c := range []struct {
		err     error
		version store.Version
		is      func(error) bool
		name    string
	}{
		{errMissing, "", store.IsNotFound, "not found"},
		{errCondition, "", store.IsPreconditionFailed, "precondition failed"},
		{errUnknown, "", store.IsAmbiguous, "ambiguous"},
		{errDenied, "", store.IsRefused, "refused"},
		{nil, "-", store.IsAmbiguous, "ambiguous"},
	} {
		d.copyErr, d.copyVersion = c.err, c.version
		_, err := b.Copy(ctx, "src", "c")
		if !c.is(err) {
			t.Errorf("copy failing with %v (version %q): %v, want %s", c.err, c.version, err, c.name)
		}
		if c.name == "not found" && store.IsAmbiguous(err) {
			t.Errorf("a copy of a missing src is ambiguous: %v", err)
		}
		var oe *store.OpError
		if !errors.As(err, &oe) || oe.Op != "copy" || oe.Key != "c" {
			t.Errorf("%v is not an *OpError of copy c", err)
		}
	}
}

// TestBucketDeleteOfAMissingKey: a driver answering not found to a delete
// has nothing to delete, which is success.
func TestBucketDeleteOfAMissingKey(t *testing.T) {
	d := newFake()
	b := store.NewBucket(d)
	d.delErrs = []error{errMissing}
	if err := b.Delete(t.Context(), "k"); err != nil {
		t.Fatalf("delete of a missing key: %v", err)
	}
	d.delErrs = []error{store.NotFound("delete", "k")}
	if err := b.Delete(t.Context(), "k"); err != nil {
		t.Fatalf("delete answered with ErrNotFound: %v", err)
	}
	d.delErrs = []error{errDenied}
	if err := b.Delete(t.Context(), "k"); !store.IsRefused(err) {
		t.Fatalf("a refused delete: %v", err)
	}
}

// headDriver records what ReadHead gives its PutFrom.
type headDriver struct {
	*fakeDriver
	head  []byte
	whole bool
	rest  int
}

func (h *headDriver) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	head, whole, err := store.ReadHead(key, r, size, 8)
	if err != nil {
		return "", err
	}
	rest, err := io.ReadAll(r)
	h.head, h.whole, h.rest = head, whole, len(rest)
	return "v1", err
}

// TestReadHeadOfAPut: a Put's body that fits the threshold is the
// caller's slice, whole; a longer one gives a head of exactly the
// threshold and the rest through the reader, as a streamed body does.
func TestReadHeadOfAPut(t *testing.T) {
	ctx := t.Context()
	h := &headDriver{fakeDriver: newFake()}
	b := store.NewBucket(h)
	small := []byte("0123")
	if _, err := b.Put(ctx, "k", small, store.PutOptions{}); err != nil || !h.whole || &h.head[0] != &small[0] || h.rest != 0 {
		t.Fatalf("small Put: whole %v, head %q, rest %d, %v", h.whole, h.head, h.rest, err)
	}
	big := []byte("0123456789abcdef01")
	if _, err := b.Put(ctx, "k", big, store.PutOptions{}); err != nil || h.whole || len(h.head) != 8 || h.rest != len(big)-8 {
		t.Fatalf("large Put: whole %v, head %d bytes, rest %d, %v", h.whole, len(h.head), h.rest, err)
	}
}

// upperDriver answers with metadata names in upper case, as some services
// send them back.
type upperDriver struct{ *fakeDriver }

func (u upperDriver) NewRangeReader(ctx context.Context, key string, offset, length int64, dataOnly bool) (*store.Reader, error) {
	r, err := u.fakeDriver.NewRangeReader(ctx, key, offset, length, dataOnly)
	if err == nil {
		r.Metadata = map[string]string{"Litestream-Timestamp": "t", "x": "y"}
	}
	return r, err
}

// TestBucketLowersMetadataNames: metadata names come back in lower case
// whatever case the service answers with.
func TestBucketLowersMetadataNames(t *testing.T) {
	d := newFake()
	d.seed("k", "body")
	o, err := store.NewBucket(upperDriver{d}).Get(t.Context(), "k")
	if err != nil || len(o.Metadata) != 2 || o.Metadata["litestream-timestamp"] != "t" || o.Metadata["x"] != "y" {
		t.Fatalf("metadata %v, %v", o.Metadata, err)
	}
}
