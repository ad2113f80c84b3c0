package s3

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cellb/cellb/core/store"
)

// abortTimeout bounds the clean-up of a failed multipart upload, which runs
// even when the caller's context is already cancelled.
const abortTimeout = 30 * time.Second

// putParts uploads the parts next gives and completes the upload with the
// Put's condition, so a large conditional write stays conditional: S3
// checks If-None-Match / If-Match when CompleteMultipartUpload makes the
// object visible. Parts are plain idempotent uploads and keep the SDK's
// retries; the completion of a conditional write does not. Whatever fails
// — S3, the body, the context — the upload is aborted, so nothing becomes
// visible and no parts are left behind (and billed).
func (d *driver) putParts(ctx context.Context, key string, next store.Chunks, opts store.PutOptions) (store.Version, error) {
	bucket, objKey := aws.String(d.opts.Bucket), aws.String(key)
	h := opts.Headers
	create := &s3.CreateMultipartUploadInput{Bucket: bucket, Key: objKey, Metadata: opts.Metadata,
		ContentType: optional(h.ContentType), ContentLanguage: optional(h.ContentLanguage),
		ContentDisposition: optional(h.ContentDisposition), ContentEncoding: optional(h.ContentEncoding),
		CacheControl: optional(h.CacheControl)}
	if !d.opts.ChecksumsWhenRequired {
		// The SDK adds a CRC32 to every part by default; the upload must
		// declare it and the completion must list each part's value.
		create.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
	}
	up, err := d.client.CreateMultipartUpload(ctx, create)
	if err != nil {
		return "", store.NotApplied("starting multipart upload", err)
	}
	uploadID := up.UploadId
	completed := false
	defer func() {
		if completed {
			return
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		defer cancel()
		_, aerr := d.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: bucket, Key: objKey, UploadId: uploadID})
		if aerr != nil && code(aerr) != "NoSuchUpload" {
			d.opts.Logger.Warn("s3: could not abort multipart upload; its parts stay until a lifecycle rule removes them",
				"bucket", d.opts.Bucket, "key", *objKey, "upload_id", aws.ToString(uploadID), "err", aerr)
		}
	}()

	parts, err := d.uploadParts(ctx, bucket, objKey, uploadID, next)
	var berr store.BodyFailure
	if errors.As(err, &berr) {
		return "", store.BodyError("put", key, berr.Err)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return "", store.NotApplied("uploading parts", err)
	}
	complete := &s3.CompleteMultipartUploadInput{
		Bucket:          bucket,
		Key:             objKey,
		UploadId:        uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}
	complete.IfNoneMatch, complete.IfMatch = preconditions(opts.Condition)
	out, err := d.client.CompleteMultipartUpload(ctx, complete, retriesFor(opts.Condition)...)
	if err != nil {
		return "", err
	}
	completed = true
	return version(out.ETag), nil
}

// uploadParts uploads the parts of next, PartConcurrency at a time
// (store.UploadParts), and returns the completed parts in order.
func (d *driver) uploadParts(ctx context.Context, bucket, objKey, uploadID *string, next store.Chunks) ([]types.CompletedPart, error) {
	var (
		mu    sync.Mutex
		parts []types.CompletedPart
	)
	n, err := store.UploadParts(ctx, next, d.opts.PartConcurrency, maxParts, func(ctx context.Context, i int, data []byte) error {
		num := aws.Int32(int32(i + 1))
		out, err := d.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket:        bucket,
			Key:           objKey,
			UploadId:      uploadID,
			PartNumber:    num,
			Body:          bytes.NewReader(data),
			ContentLength: aws.Int64(int64(len(data))),
		})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if len(parts) <= i {
			parts = append(parts, make([]types.CompletedPart, i+1-len(parts))...)
		}
		parts[i] = types.CompletedPart{PartNumber: num, ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return parts[:n], nil
}

// maxParts is S3's limit on the parts of one upload.
const maxParts = 10000
