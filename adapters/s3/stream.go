package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cellb/cellb/core/store"
)

var _ store.Streamer = (*Store)(nil)

// PutFrom implements store.Streamer. Up to MultipartThreshold bytes of the
// body are read first; a body that ends there goes in one PutObject, as
// Put sends it. A longer body (or one declared that long) is uploaded in
// parts of PartSize as it is read, PartConcurrency parts in flight, and the
// object appears only when CompleteMultipartUpload succeeds with the Put's
// condition. A body that fails, or a context that ends, first aborts the
// upload: nothing becomes visible.
func (s *Store) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	if err := store.CheckPut(ctx, key, opts); err != nil {
		return "", err
	}
	body := store.Body(ctx, r, size)
	head, whole, err := store.ReadHead(key, body, size, s.opts.MultipartThreshold)
	switch {
	case err != nil:
		return "", err
	case whole:
		return s.Put(ctx, key, head, opts)
	}
	return s.putParts(ctx, key, store.ChunksOf(head, s.opts.PartSize, store.ChunksFrom(body, s.opts.PartSize)), opts)
}

// NewRangeReader implements store.Streamer with a ranged GetObject. A read
// of no bytes, or from the very end, is a HeadObject, since S3 answers a
// range that starts at the end with 416.
func (s *Store) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("%w (offset %d)", store.ErrInvalidRange, offset)}
	}
	bucket, objKey := aws.String(s.opts.Bucket), aws.String(key)
	if length != 0 {
		in := &s3.GetObjectInput{Bucket: bucket, Key: objKey}
		if offset > 0 || length > 0 {
			rng := fmt.Sprintf("bytes=%d-", offset)
			if length > 0 {
				rng += fmt.Sprint(offset + length - 1)
			}
			in.Range = aws.String(rng)
		}
		out, err := s.client.GetObject(ctx, in)
		if err == nil {
			v, ok := version(out.ETag)
			if !ok {
				out.Body.Close()
				return nil, &store.OpError{Op: "get", Key: key, Err: ErrNoVersion}
			}
			total := aws.ToInt64(out.ContentLength)
			if in.Range != nil {
				total, err = rangeTotal(aws.ToString(out.ContentRange), total)
				if err != nil {
					out.Body.Close()
					return nil, &store.OpError{Op: "get", Key: key, Err: err}
				}
			}
			n, err := store.CheckRange("get", key, offset, length, total)
			if err != nil || n != aws.ToInt64(out.ContentLength) {
				out.Body.Close()
				if err == nil {
					err = &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("s3: asked for %d bytes from %d of %d, got %d", n, offset, total, aws.ToInt64(out.ContentLength))}
				}
				return nil, err
			}
			return &store.Reader{
				Key: key, Version: v, Size: total, Metadata: lowerKeys(out.Metadata), Modified: aws.ToTime(out.LastModified),
				Headers: headersOf(out.ContentType, out.ContentLanguage, out.ContentDisposition, out.ContentEncoding, out.CacheControl),
				Offset:  offset, Length: n, Body: out.Body,
			}, nil
		}
		if status(err) != http.StatusRequestedRangeNotSatisfiable {
			return nil, readError("get", key, err)
		}
		// 416: the range starts at or past the end; HEAD tells which.
	}
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: objKey})
	if err != nil {
		return nil, readError("get", key, err)
	}
	v, ok := version(head.ETag)
	if !ok {
		return nil, &store.OpError{Op: "get", Key: key, Err: ErrNoVersion}
	}
	total := aws.ToInt64(head.ContentLength)
	n, err := store.CheckRange("get", key, offset, length, total)
	if err != nil {
		return nil, err
	}
	if n != 0 {
		return nil, &store.OpError{Op: "get", Key: key, Err: errors.New("s3: the server refused a satisfiable range")}
	}
	return &store.Reader{
		Key: key, Version: v, Size: total, Metadata: lowerKeys(head.Metadata), Modified: aws.ToTime(head.LastModified),
		Headers: headersOf(head.ContentType, head.ContentLanguage, head.ContentDisposition, head.ContentEncoding, head.CacheControl),
		Offset:  offset, Length: 0, Body: http.NoBody,
	}, nil
}

// rangeTotal reads the object's size from a Content-Range header
// ("bytes 0-9/100"); without one the server sent the whole object, whose
// size is the body's.
func rangeTotal(contentRange string, bodyLen int64) (int64, error) {
	if contentRange == "" {
		return bodyLen, nil
	}
	var lo, hi, total int64
	if _, err := fmt.Sscanf(contentRange, "bytes %d-%d/%d", &lo, &hi, &total); err != nil {
		return 0, fmt.Errorf("s3: unreadable Content-Range %q: %w", contentRange, err)
	}
	return total, nil
}
