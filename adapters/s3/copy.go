package s3

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cellb/cellb/core/store"
)

// maxCopyPart is S3's largest part of a multipart copy (5 GiB); a
// variable only so that a test can copy in several small parts.
var maxCopyPart int64 = 5 << 30

// errSourceChanged: the source was deleted or replaced between the
// HeadObject of a copy and one of its parts. Classify calls it
// KindNotFound: the version the copy measured is gone.
var errSourceChanged = errors.New("the source changed during the copy")

// Copy copies with a multipart copy, so the bytes stay in the bucket:
// HeadObject learns the source's size, ETag, metadata and content headers;
// CreateMultipartUpload opens the destination with that metadata and
// those headers; UploadPartCopy copies the source in parts of at most 5
// GiB (one part up to that size), each conditioned on the ETag
// (x-amz-copy-source-if-match), so every part reads the version measured;
// CompleteMultipartUpload makes the destination appear with
// If-None-Match: *, sent without retries like every conditional write.
//
// A plain CopyObject would be one request fewer, but S3-compatible
// servers differ on whether it honours If-None-Match (versitygw 1.8
// ignores it and overwrites), while the condition on the completion of a
// multipart upload is the one every qualifying server honours (the Put of
// a large object relies on it). It also copies objects over CopyObject's
// 5 GiB limit. An object of more than 10,000 such parts is
// store.ErrCopyTooLarge (an *OpError, which the Bucket keeps as it is: the
// copy is not ambiguous, nothing was written).
func (d *driver) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	bucket, objKey := aws.String(d.opts.Bucket), aws.String(dst)
	head, err := d.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String(src)})
	if err != nil {
		if d.Classify(err).Kind == store.KindNotFound {
			return "", err
		}
		return "", store.NotApplied("reading the source's attributes", err)
	}
	size := aws.ToInt64(head.ContentLength)
	if (size+maxCopyPart-1)/maxCopyPart > maxParts {
		return "", &store.OpError{Op: "copy", Key: dst, Err: fmt.Errorf("%w: %d bytes", store.ErrCopyTooLarge, size)}
	}
	up, err := d.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bucket, Key: objKey,
		Metadata: head.Metadata, ContentType: head.ContentType, ContentLanguage: head.ContentLanguage,
		ContentDisposition: head.ContentDisposition, ContentEncoding: head.ContentEncoding, CacheControl: head.CacheControl})
	if err != nil {
		return "", store.NotApplied("starting multipart copy", err)
	}
	completed := false
	defer func() {
		if !completed {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
			defer cancel()
			_, _ = d.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: bucket, Key: objKey, UploadId: up.UploadId})
		}
	}()
	source := aws.String(copySource(d.opts.Bucket, src))
	var parts []types.CompletedPart
	for i, off := int32(1), int64(0); off < size || i == 1; i, off = i+1, off+maxCopyPart {
		in := &s3.UploadPartCopyInput{Bucket: bucket, Key: objKey, UploadId: up.UploadId, PartNumber: aws.Int32(i),
			CopySource: source, CopySourceIfMatch: head.ETag}
		if size > maxCopyPart {
			in.CopySourceRange = aws.String(fmt.Sprintf("bytes=%d-%d", off, min(off+maxCopyPart, size)-1))
		}
		out, err := d.client.UploadPartCopy(ctx, in)
		if err != nil {
			if d.Classify(err).Kind == store.KindNotFound || status(err) == http.StatusPreconditionFailed {
				return "", fmt.Errorf("%w: %w", errSourceChanged, err)
			}
			return "", store.NotApplied(fmt.Sprintf("copying part %d", i), err)
		}
		var etag *string
		if out.CopyPartResult != nil {
			etag = out.CopyPartResult.ETag
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(i), ETag: etag})
	}
	if err := ctx.Err(); err != nil {
		return "", store.NotApplied("copying", err)
	}
	out, err := d.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bucket, Key: objKey,
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}, IfNoneMatch: aws.String("*")}, noRetries)
	if err != nil {
		return "", err
	}
	completed = true
	return version(out.ETag), nil
}

// copySource is the x-amz-copy-source of key: "bucket/key", with each
// segment of the key percent-encoded.
func copySource(bucket, key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return bucket + "/" + strings.Join(segs, "/")
}
