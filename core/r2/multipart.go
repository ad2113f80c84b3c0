package r2

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cellb/cellb/core/layout"
	"io"
	"sort"

	"github.com/cellb/cellb/core/store"
)

// Multipart uploads. The Store port has no multipart calls of its own (its
// adapters use their service's multipart API inside store.PutFrom), so an
// upload is staged in the bucket: each part is an object under
//
//	r2-multipart/<bucket>/<uploadId>/<partNumber:05d>
//
// beside the upload's record (…/<uploadId>/upload), and Complete streams
// the parts, in order, into one store.PutFrom of the final key, then
// deletes them. The final object is in celld's format; the staging keys
// are CellB's own (celld does not resume CellB's uploads, nor CellB
// celld's). A plain Put of any size streams too: multipart is only needed
// to upload parts from several requests or processes.

func uploadPrefix(bucket, id string) string { return layout.R2MultipartPrefix(bucket) + id + "/" }

// MultipartUpload is an upload in progress (R2MultipartUpload).
type MultipartUpload struct {
	b        *Bucket
	Key      string
	UploadID string
}

// UploadedPart names a part for Complete.
type UploadedPart struct {
	PartNumber int
	ETag       string
}

// uploadRecord is what Complete needs from CreateMultipartUpload.
type uploadRecord struct {
	Key     string               `json:"key"`
	Record  string               `json:"record"`
	Headers store.ContentHeaders `json:"headers"`
}

// ErrNoSuchUpload: the upload id names no upload in progress (completed,
// aborted, or never created).
var ErrNoSuchUpload = errors.New("the specified multipart upload does not exist")

// CreateMultipartUpload starts an upload of key with opts' metadata
// (OnlyIf, Checksums and Size do not apply to multipart uploads).
func (b *Bucket) CreateMultipartUpload(ctx context.Context, key string, opts PutOptions) (*MultipartUpload, error) {
	var u *MultipartUpload
	err := b.gated(ctx, func(ctx context.Context) (err error) {
		u, err = b.createMultipartUpload(ctx, key, opts)
		return err
	})
	return u, err
}

func (b *Bucket) createMultipartUpload(ctx context.Context, key string, opts PutOptions) (*MultipartUpload, error) {
	if err := b.ValidateKey(key); err != nil {
		return nil, err
	}
	md, err := b.record(key, PutOptions{CustomMetadata: opts.CustomMetadata, HTTPMetadata: opts.HTTPMetadata, StorageClass: opts.StorageClass}, Checksums{})
	if err != nil {
		return nil, err
	}
	rec := md[MetadataName]
	var id [16]byte
	_, _ = rand.Read(id[:])
	u := &MultipartUpload{b: b, Key: key, UploadID: hex.EncodeToString(id[:])}
	data, _ := json.Marshal(uploadRecord{Key: key, Record: rec, Headers: storeHeaders(opts.HTTPMetadata)})
	if _, err := b.s.Put(ctx, uploadPrefix(b.name, u.UploadID)+"upload", data, store.PutOptions{Condition: store.IfAbsent}); err != nil {
		return nil, err
	}
	return u, nil
}

// ResumeMultipartUpload names an upload created earlier (by any process).
func (b *Bucket) ResumeMultipartUpload(key, uploadID string) *MultipartUpload {
	return &MultipartUpload{b: b, Key: key, UploadID: uploadID}
}

func (u *MultipartUpload) record(ctx context.Context) (uploadRecord, error) {
	var rec uploadRecord
	o, err := u.b.s.Get(ctx, uploadPrefix(u.b.name, u.UploadID)+"upload")
	if store.IsNotFound(err) {
		return rec, fmt.Errorf("r2 %s/%s upload %s: %w", u.b.name, u.Key, u.UploadID, ErrNoSuchUpload)
	}
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(o.Data, &rec); err != nil || rec.Key != u.Key {
		return rec, fmt.Errorf("r2 %s/%s upload %s: %w (its record names key %q)", u.b.name, u.Key, u.UploadID, ErrNoSuchUpload, rec.Key)
	}
	return rec, nil
}

// UploadPart stores part partNumber (1..10000) from body, streamed; size
// is its length when known (0 or negative: unknown).
func (u *MultipartUpload) UploadPart(ctx context.Context, partNumber int, body io.Reader, size int64) (UploadedPart, error) {
	var p UploadedPart
	err := u.b.gated(ctx, func(ctx context.Context) (err error) {
		p, err = u.uploadPart(ctx, partNumber, body, size)
		return err
	})
	return p, err
}

func (u *MultipartUpload) uploadPart(ctx context.Context, partNumber int, body io.Reader, size int64) (UploadedPart, error) {
	if partNumber < 1 || partNumber > 10000 {
		return UploadedPart{}, &MetadataError{Bucket: u.b.name, Key: u.Key, Reason: fmt.Sprintf("part number %d is not between 1 and 10000", partNumber)}
	}
	if _, err := u.record(ctx); err != nil {
		return UploadedPart{}, err
	}
	if size <= 0 {
		size = -1
	}
	v, err := store.PutFrom(ctx, u.b.s, fmt.Sprintf("%s%05d", uploadPrefix(u.b.name, u.UploadID), partNumber), body, size, store.PutOptions{})
	if err != nil {
		return UploadedPart{}, err
	}
	return UploadedPart{PartNumber: partNumber, ETag: etagOf(string(v))}, nil
}

// Abort deletes the upload and its parts.
func (u *MultipartUpload) Abort(ctx context.Context) error {
	return u.b.gated(ctx, u.abort)
}

func (u *MultipartUpload) abort(ctx context.Context) error {
	page, err := store.ListAll(ctx, u.b.s, store.ListOptions{Prefix: uploadPrefix(u.b.name, u.UploadID)})
	if err != nil {
		return err
	}
	for _, o := range page.Objects {
		if err := u.b.s.Delete(ctx, o.Key); err != nil {
			return err
		}
	}
	return nil
}

// Complete joins parts (in part-number order; each ETag must be the one
// UploadPart returned) into the object, streamed, and deletes the staged
// parts. A part whose ETag differs fails with *PreconditionFailedError.
func (u *MultipartUpload) Complete(ctx context.Context, parts []UploadedPart) (*Object, error) {
	var o *Object
	err := u.b.gated(ctx, func(ctx context.Context) (err error) {
		o, err = u.complete(ctx, parts)
		return err
	})
	return o, err
}

func (u *MultipartUpload) complete(ctx context.Context, parts []UploadedPart) (*Object, error) {
	rec, err := u.record(ctx)
	if err != nil {
		return nil, err
	}
	parts = append([]UploadedPart(nil), parts...)
	sort.Slice(parts, func(i, j int) bool { return parts[i].PartNumber < parts[j].PartNumber })
	var size int64
	readers := make([]*store.Reader, 0, len(parts))
	defer func() {
		for _, r := range readers {
			r.Close()
		}
	}()
	for i, p := range parts {
		if i > 0 && parts[i-1].PartNumber == p.PartNumber {
			return nil, &MetadataError{Bucket: u.b.name, Key: u.Key, Reason: fmt.Sprintf("part %d listed twice", p.PartNumber)}
		}
		r, err := store.NewReader(ctx, u.b.s, fmt.Sprintf("%s%05d", uploadPrefix(u.b.name, u.UploadID), p.PartNumber))
		if store.IsNotFound(err) {
			return nil, &PreconditionFailedError{Bucket: u.b.name, Key: u.Key, Reason: fmt.Sprintf("part %d was not uploaded", p.PartNumber)}
		}
		if err != nil {
			return nil, err
		}
		readers = append(readers, r)
		if etagOf(string(r.Version)) != etagOf(p.ETag) {
			return nil, &PreconditionFailedError{Bucket: u.b.name, Key: u.Key, Reason: fmt.Sprintf("part %d has ETag %s, not %s", p.PartNumber, etagOf(string(r.Version)), etagOf(p.ETag))}
		}
		size += r.Length
	}
	bodies := make([]io.Reader, len(readers))
	for i, r := range readers {
		bodies[i] = r
	}
	v, err := store.PutFrom(ctx, u.b.s, u.b.Key(u.Key), io.MultiReader(bodies...), size, store.PutOptions{Metadata: map[string]string{MetadataName: rec.Record}, Headers: rec.Headers})
	if err != nil {
		return nil, err
	}
	abortErr := u.Abort(ctx)
	o, err := u.b.Head(ctx, u.Key)
	if err != nil || o.Version != string(v) {
		// Replaced (or unreadable) right after: describe what was written.
		o = &Object{Key: u.Key, Version: string(v), ETag: etagOf(string(v)), Size: size}
		o.HTTPETag = `"` + o.ETag + `"`
		if err := decodeRecord(o, map[string]string{MetadataName: rec.Record}, rec.Headers); err != nil {
			return nil, &MetadataError{Bucket: u.b.name, Key: u.Key, Reason: err.Error()}
		}
	}
	if abortErr != nil {
		return o, fmt.Errorf("r2 %s/%s: the object was written but its staged parts under %s remain: %w", u.b.name, u.Key, uploadPrefix(u.b.name, u.UploadID), abortErr)
	}
	return o, nil
}
