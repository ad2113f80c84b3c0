// Package s3 is CellB's Store on Amazon S3 and S3-compatible services.
//
// Conditional writes use S3's own preconditions: create-only is
// If-None-Match: * and compare-and-swap is If-Match: <ETag>, on PutObject
// and, for objects of MultipartThreshold bytes or more, on
// CompleteMultipartUpload (the parts are uploaded first; the condition is
// checked when the object appears). A Version is the object's ETag, quoted
// as S3 sends it.
//
// Conditional requests are sent with the SDK's retries turned off: a retry
// of a compare-and-swap that was applied the first time would meet its own
// write and report a false 412. Only a clean rejection (412, a 409 for a
// conflicting or existing object, a 404 for If-Match on a missing key) is
// ErrPreconditionFailed; every other failure of a conditional write is
// ErrAmbiguous and the caller must re-read.
//
// The ETag trap: a single-part ETag is the MD5 of the body. If-Match with
// an old ETag therefore succeeds when the current object happens to have
// the same bytes as the one the ETag was read from, and a writer that puts
// the body that is already there cannot tell it raced with anyone. CellB's
// records always carry something unique (an epoch, a TXID, a node id and a
// time) so that equal bodies mean equal states; anyone storing other data
// through this package must do the same.
//
// A service qualifies only if it honours If-None-Match and If-Match on PUT
// (AWS S3 since 2024, R2, Tigris, MinIO, versitygw); run `cellb diagnose
// s3://bucket/prefix` to check one.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/cellb/cellb/core/store"
)

// Store is a store.Store on one S3 bucket.
type Store struct {
	client *s3.Client
	opts   Options
}

var _ store.Store = (*Store)(nil)

// New builds a client from the standard AWS configuration (environment,
// shared config and credential files, instance roles) overridden by opts.
func New(ctx context.Context, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	// The SDK's own log lines (such as its IMDS fallback warning) would
	// reach the terminal ahead of CellB's: errors come back as values.
	load := []func(*config.LoadOptions) error{config.WithLogger(logging.Nop{})}
	if opts.Region != "" {
		load = append(load, config.WithRegion(opts.Region))
	}
	if opts.Credentials != nil {
		load = append(load, config.WithCredentialsProvider(opts.Credentials))
	}
	if opts.ChecksumsWhenRequired {
		load = append(load,
			config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
			config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("s3: loading AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		// S3-compatible services rarely care, but the signer needs one.
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		o.UsePathStyle = opts.UsePathStyle
		// Objects uploaded in parts carry composite checksums the SDK
		// cannot verify; it would log that on every such Get.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	return &Store{client: client, opts: opts}, nil
}

// NewFromClient wraps a client the caller configured. Endpoint, Region,
// UsePathStyle, Credentials and ChecksumsWhenRequired in opts are ignored.
func NewFromClient(client *s3.Client, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Store{client: client, opts: opts}, nil
}

// Client returns the underlying S3 client.
func (s *Store) Client() *s3.Client { return s.client }

// noRetries turns the SDK's retries off for one call.
func noRetries(o *s3.Options) {
	o.Retryer = aws.NopRetryer{}
	o.RetryMaxAttempts = 0
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (*store.Object, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.opts.Bucket),
		Key:    aws.String(key),
	})
	if err != nil {
		return nil, readError("get", key, err)
	}
	defer out.Body.Close()
	buf := bytes.NewBuffer(make([]byte, 0, max(aws.ToInt64(out.ContentLength), 0)))
	if _, err := buf.ReadFrom(out.Body); err != nil {
		return nil, &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("reading body: %w", err)}
	}
	v, ok := version(out.ETag)
	if !ok {
		return nil, &store.OpError{Op: "get", Key: key, Err: ErrNoVersion}
	}
	return &store.Object{
		Key:      key,
		Data:     buf.Bytes(),
		Version:  v,
		Metadata: lowerKeys(out.Metadata),
		Headers:  headersOf(out.ContentType, out.ContentLanguage, out.ContentDisposition, out.ContentEncoding, out.CacheControl),
		Modified: aws.ToTime(out.LastModified),
	}, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if err := store.CheckPut(ctx, key, opts); err != nil {
		return "", err
	}
	cond := opts.Condition
	if int64(len(data)) >= s.opts.MultipartThreshold {
		return s.putMultipart(ctx, key, data, opts)
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.opts.Bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		Metadata:      opts.Metadata,

		ContentType:        optional(opts.Headers.ContentType),
		ContentLanguage:    optional(opts.Headers.ContentLanguage),
		ContentDisposition: optional(opts.Headers.ContentDisposition),
		ContentEncoding:    optional(opts.Headers.ContentEncoding),
		CacheControl:       optional(opts.Headers.CacheControl),
	}
	in.IfNoneMatch, in.IfMatch = preconditions(cond)
	var optFns []func(*s3.Options)
	if cond.IsConditional() {
		optFns = append(optFns, noRetries)
	}
	out, err := s.client.PutObject(ctx, in, optFns...)
	if err != nil {
		return "", writeError(key, cond, err)
	}
	v, ok := version(out.ETag)
	if !ok {
		return "", store.Ambiguous("put", key, ErrNoVersion)
	}
	return v, nil
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

// Delete implements store.Store. S3 answers 204 for a missing key too.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.opts.Bucket),
		Key:    aws.String(key),
	})
	if err != nil && !isMissingObject(err) {
		return readError("delete", key, err)
	}
	return nil
}

// maxListKeys is S3's largest page.
const maxListKeys = 1000

// List implements store.Store with ListObjectsV2. The continuation token is
// S3's own, passed through unchanged.
func (s *Store) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	if err := store.ValidatePrefix(opts.Prefix); err != nil {
		return store.ListPage{}, err
	}
	limit := opts.Limit
	if limit <= 0 || limit > maxListKeys {
		limit = maxListKeys
	}
	in := &s3.ListObjectsV2Input{
		Bucket:  aws.String(s.opts.Bucket),
		Prefix:  aws.String(opts.Prefix),
		MaxKeys: aws.Int32(int32(limit)),
	}
	if opts.Delimiter != "" {
		in.Delimiter = aws.String(opts.Delimiter)
	}
	if opts.Token != "" {
		in.ContinuationToken = aws.String(opts.Token)
	}
	out, err := s.client.ListObjectsV2(ctx, in)
	if err != nil {
		return store.ListPage{}, readError("list", opts.Prefix, err)
	}
	var page store.ListPage
	for _, o := range out.Contents {
		k := aws.ToString(o.Key)
		v, ok := version(o.ETag)
		if !ok {
			return store.ListPage{}, &store.OpError{Op: "list", Key: opts.Prefix, Err: fmt.Errorf("%w (key %q)", ErrNoVersion, k)}
		}
		page.Objects = append(page.Objects, store.ObjectInfo{
			Key:      k,
			Size:     aws.ToInt64(o.Size),
			Version:  v,
			Modified: aws.ToTime(o.LastModified),
		})
	}
	for _, p := range out.CommonPrefixes {
		page.Prefixes = append(page.Prefixes, aws.ToString(p.Prefix))
	}
	if aws.ToBool(out.IsTruncated) {
		page.NextToken = aws.ToString(out.NextContinuationToken)
		if page.NextToken == "" {
			return store.ListPage{}, &store.OpError{Op: "list", Key: opts.Prefix, Err: errors.New("s3: truncated listing without a continuation token")}
		}
	}
	return page, nil
}

// version turns an ETag into a Version, always in its quoted form, since
// some services quote ETags in one response and not in another.
func version(etag *string) (store.Version, bool) {
	e := strings.TrimSpace(aws.ToString(etag))
	if e == "" || e == `""` {
		return "", false
	}
	if !strings.HasPrefix(e, `"`) && !strings.HasPrefix(e, `W/"`) {
		e = `"` + e + `"`
	}
	return store.Version(e), true
}

// lowerKeys returns md with lower-case names: HTTP header names are case
// insensitive and services disagree on the case they send back.
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
