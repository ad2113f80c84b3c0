package s3

import (
	"bytes"
	"context"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cellb/cellb/core/store"
)

// PutFrom reads up to MultipartThreshold bytes of the body first; a body
// that ends there goes in one PutObject. A longer body (or one declared
// that long) is uploaded in parts of PartSize as it is read,
// PartConcurrency parts in flight, and the object appears only when
// CompleteMultipartUpload succeeds with the Put's condition. A body that
// fails, or a context that ends, first aborts the upload: nothing becomes
// visible.
func (d *driver) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	head, whole, err := store.ReadHead(key, r, size, d.opts.MultipartThreshold)
	switch {
	case err != nil:
		return "", err
	case whole:
		return d.putObject(ctx, key, head, opts)
	}
	return d.putParts(ctx, key, store.ChunksOf(head, d.opts.PartSize, store.ChunksFrom(r, d.opts.PartSize)), opts)
}

// putObject writes a body in one PutObject. An empty version (no ETag in
// the answer) is left for the Bucket to report as ambiguous.
func (d *driver) putObject(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	h := opts.Headers
	in := &s3.PutObjectInput{
		Bucket:        aws.String(d.opts.Bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		Metadata:      opts.Metadata,

		ContentType:        optional(h.ContentType),
		ContentLanguage:    optional(h.ContentLanguage),
		ContentDisposition: optional(h.ContentDisposition),
		ContentEncoding:    optional(h.ContentEncoding),
		CacheControl:       optional(h.CacheControl),
	}
	in.IfNoneMatch, in.IfMatch = preconditions(opts.Condition)
	out, err := d.client.PutObject(ctx, in, retriesFor(opts.Condition)...)
	if err != nil {
		return "", err
	}
	return version(out.ETag), nil
}

// preconditions returns the If-None-Match and If-Match headers of cond.
func preconditions(cond store.Condition) (ifNoneMatch, ifMatch *string) {
	switch cond.Kind {
	case store.CreateOnly:
		return aws.String("*"), nil
	case store.MatchVersion:
		return nil, aws.String(string(cond.Version))
	}
	return nil, nil
}

// retriesFor turns the SDK's retries off for a conditional request: a
// retry of a write applied the first time would meet its own write and
// report a false 412.
func retriesFor(cond store.Condition) []func(*s3.Options) {
	if cond.IsConditional() {
		return []func(*s3.Options){noRetries}
	}
	return nil
}

// noRetries turns the SDK's retries off for one call.
func noRetries(o *s3.Options) {
	o.Retryer = aws.NopRetryer{}
	o.RetryMaxAttempts = 0
}
