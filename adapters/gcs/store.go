// Package gcs is CellB's Store on Google Cloud Storage.
//
// A Version is the object's generation, as a decimal string. Create-only
// is the DoesNotExist precondition (ifGenerationMatch=0) and
// compare-and-swap is GenerationMatch; a 412 answer is
// ErrPreconditionFailed.
//
// Retries. The storage client's default policy (RetryIdempotent) treats an
// upload with a generation precondition as idempotent and retries it. That
// is exactly wrong for a coordination write: if the first attempt was
// applied and its answer lost, the retry meets the new generation and gets
// a 412, and the caller would be told it lost a race it won. So a
// conditional Put sets RetryNever on its object handle and sends the whole
// body in one request (ChunkSize 0, so the precondition is evaluated once,
// when the object is created); every failure other than a 412 is then
// ErrAmbiguous and the caller re-reads. Unconditional Puts use RetryAlways:
// repeating them can only write the same bytes again. Reads and deletes
// keep the client's defaults. Unconditional uploads are tried at most three
// times.
//
// Every upload carries the body's CRC32C, which the service checks.
//
// Credentials are Application Default Credentials unless Options say
// otherwise; STORAGE_EMULATOR_HOST is honoured as by every Google client.
package gcs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"

	"github.com/cellb/cellb/core/store"
)

// Store is a store.Store on one GCS bucket.
type Store struct {
	client *storage.Client
	bucket *storage.BucketHandle
	owned  bool
	// streamCopies: Copy streams instead of rewriting (Options.StreamCopies).
	streamCopies bool
}

var _ store.Store = (*Store)(nil)

// New opens a client with opts. Close the Store to release it.
func New(ctx context.Context, opts Options) (*Store, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	client, err := storage.NewClient(ctx, opts.clientOptions()...)
	if err != nil {
		return nil, fmt.Errorf("gcs: creating client: %w", err)
	}
	return &Store{client: client, bucket: client.Bucket(opts.Bucket), owned: true, streamCopies: opts.StreamCopies}, nil
}

// NewFromClient wraps a client the caller owns (and closes).
func NewFromClient(client *storage.Client, bucket string) (*Store, error) {
	if bucket == "" {
		return nil, fmt.Errorf("gcs: bucket name is empty")
	}
	return &Store{client: client, bucket: client.Bucket(bucket)}, nil
}

// Client returns the underlying storage client.
func (s *Store) Client() *storage.Client { return s.client }

// Close releases the client if New created it.
func (s *Store) Close() error {
	if s.owned {
		return s.client.Close()
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// unconditionalAttempts bounds the tries of an unconditional upload, so a
// server that keeps failing yields an error instead of retrying forever.
const unconditionalAttempts = 3

// Get implements store.Store: the attributes, then the body of exactly
// that generation, as stored (see open).
func (s *Store) Get(ctx context.Context, key string) (*store.Object, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	r, attrs, n, err := s.open(ctx, key, 0, -1)
	if err != nil {
		return nil, err
	}
	data := make([]byte, 0, n)
	if r != nil {
		defer r.Close()
		buf := bytes.NewBuffer(data)
		if _, err := buf.ReadFrom(r); err != nil {
			return nil, &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("reading body: %w", err)}
		}
		data = buf.Bytes()
	}
	return &store.Object{
		Key:      key,
		Data:     data,
		Version:  generationVersion(attrs.Generation),
		Metadata: lowerKeys(attrs.Metadata),
		Headers:  headersOf(attrs),
		Modified: attrs.Updated,
	}, nil
}

// GetData implements store.DataGetter in one request: the download of the
// current generation, whose number comes with the body, so the pair always
// belongs to one version. Metadata and Headers stay empty (a download does
// not carry them all; see open).
func (s *Store) GetData(ctx context.Context, key string) (*store.Object, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	r, err := s.bucket.Object(key).ReadCompressed(true).NewReader(ctx)
	if err != nil {
		return nil, readError("get", key, err)
	}
	defer r.Close()
	if r.Attrs.Generation <= 0 {
		return nil, &store.OpError{Op: "get", Key: key, Err: ErrNoVersion}
	}
	var buf bytes.Buffer
	if n := r.Remain(); n > 0 {
		buf.Grow(int(n))
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("reading body: %w", err)}
	}
	if got, want := int64(buf.Len()), r.Attrs.Size; want >= 0 && got != want {
		return nil, &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("gcs: read %d bytes of a %d-byte object", got, want)}
	}
	return &store.Object{
		Key:      key,
		Data:     buf.Bytes(),
		Version:  generationVersion(r.Attrs.Generation),
		Modified: r.Attrs.LastModified,
	}, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if err := store.ValidateKey(key); err != nil {
		return "", err
	}
	if err := store.ValidatePutOptions(opts); err != nil {
		return "", &store.OpError{Op: "put", Key: key, Err: err}
	}
	cond := opts.Condition
	obj, err := s.conditioned(key, cond)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		// Nothing was sent, so nothing can have been applied.
		return "", &store.OpError{Op: "put", Key: key, Err: err}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := obj.NewWriter(wctx)
	if cond.IsConditional() {
		w.ChunkSize = 0
	}
	w.Metadata = opts.Metadata
	setHeaders(w, opts.Headers)
	w.CRC32C = crc32.Checksum(data, castagnoli)
	w.SendCRC32C = true
	if _, err := w.Write(data); err != nil {
		cancel() // abandons the upload; Close then reports the cause
		w.Close()
		return "", writeError(key, cond, err)
	}
	if err := w.Close(); err != nil {
		return "", writeError(key, cond, err)
	}
	attrs := w.Attrs()
	if attrs == nil || attrs.Generation <= 0 {
		return "", store.Ambiguous("put", key, ErrNoVersion)
	}
	return generationVersion(attrs.Generation), nil
}

// conditioned returns the handle of key with cond's precondition and the
// retry policy that goes with it (see the package comment).
func (s *Store) conditioned(key string, cond store.Condition) (*storage.ObjectHandle, error) {
	obj := s.bucket.Object(key)
	switch cond.Kind {
	case store.CreateOnly:
		obj = obj.If(storage.Conditions{DoesNotExist: true})
	case store.MatchVersion:
		gen, err := parseGeneration(cond.Version)
		if err != nil {
			// No object can have this version, so the condition is false.
			return nil, &store.OpError{Op: "put", Key: key, Err: fmt.Errorf("%w: %w", store.ErrPreconditionFailed, err)}
		}
		obj = obj.If(storage.Conditions{GenerationMatch: gen})
	}
	if cond.IsConditional() {
		return obj.Retryer(storage.WithPolicy(storage.RetryNever)), nil
	}
	return obj.Retryer(storage.WithPolicy(storage.RetryAlways), storage.WithMaxAttempts(unconditionalAttempts)), nil
}

// Delete implements store.Store; a missing key is success.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	err := s.bucket.Object(key).Delete(ctx)
	if err != nil && !isMissingObject(err) {
		return readError("delete", key, err)
	}
	return nil
}

func generationVersion(g int64) store.Version {
	return store.Version(strconv.FormatInt(g, 10))
}

// errBadGeneration is returned for a version no GCS object can have.
var errBadGeneration = errors.New("gcs: version is not an object generation (a positive decimal number)")

func parseGeneration(v store.Version) (int64, error) {
	g, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || g <= 0 {
		return 0, fmt.Errorf("%w: %q", errBadGeneration, string(v))
	}
	return g, nil
}

// lowerKeys returns md with lower-case names, as the other adapters do.
func lowerKeys(md map[string]string) map[string]string {
	if len(md) == 0 {
		return nil
	}
	out := make(map[string]string, len(md))
	for k, v := range md {
		out[strings.ToLower(k)] = v
	}
	return out
}
