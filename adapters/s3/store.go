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
//
// The Store is a store.Bucket over this package's driver: the Bucket
// validates, checks ranges and decides what each failure means from the
// driver's Classify; the driver is the SDK calls.
package s3

import (
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

// Store is a store.Store on one S3 bucket: the portable Bucket over the
// S3 driver, plus the client it uses.
type Store struct {
	*store.Bucket
	client *s3.Client
}

var _ store.Store = (*Store)(nil)

// ErrNoVersion is the store's: a response without an ETag. A read fails
// with it; a write that succeeded without one is ambiguous.
var ErrNoVersion = store.ErrNoVersion

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
	return newStore(client, opts), nil
}

// NewFromClient wraps a client the caller configured. Endpoint, Region,
// UsePathStyle, Credentials and ChecksumsWhenRequired in opts are ignored.
func NewFromClient(client *s3.Client, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return newStore(client, opts), nil
}

func newStore(client *s3.Client, opts Options) *Store {
	return &Store{Bucket: store.NewBucket(&driver{client: client, opts: opts}), client: client}
}

// Client returns the underlying S3 client.
func (s *Store) Client() *s3.Client { return s.client }

// driver is the store.Driver on one bucket: the SDK calls, each returning
// the SDK's errors for Classify to read.
type driver struct {
	client *s3.Client
	opts   Options
}

var _ store.Driver = (*driver)(nil)

// Close has nothing to release: the client holds no resources of its own.
func (d *driver) Close() error { return nil }

// Delete removes key. S3 answers 204 for a missing key too.
func (d *driver) Delete(ctx context.Context, key string) error {
	_, err := d.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(d.opts.Bucket), Key: aws.String(key)})
	return err
}

// List returns one page of ListObjectsV2. The continuation token is S3's
// own, passed through unchanged.
func (d *driver) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	in := &s3.ListObjectsV2Input{
		Bucket:  aws.String(d.opts.Bucket),
		Prefix:  aws.String(opts.Prefix),
		MaxKeys: aws.Int32(int32(opts.Limit)),
	}
	if opts.Delimiter != "" {
		in.Delimiter = aws.String(opts.Delimiter)
	}
	if opts.Token != "" {
		in.ContinuationToken = aws.String(opts.Token)
	}
	out, err := d.client.ListObjectsV2(ctx, in)
	if err != nil {
		return store.ListPage{}, err
	}
	var page store.ListPage
	for _, o := range out.Contents {
		k := aws.ToString(o.Key)
		v := version(o.ETag)
		if v == "" {
			return store.ListPage{}, fmt.Errorf("%w (key %q)", store.ErrNoVersion, k)
		}
		page.Objects = append(page.Objects, store.ObjectInfo{Key: k, Size: aws.ToInt64(o.Size), Version: v, Modified: aws.ToTime(o.LastModified)})
	}
	for _, p := range out.CommonPrefixes {
		page.Prefixes = append(page.Prefixes, aws.ToString(p.Prefix))
	}
	if aws.ToBool(out.IsTruncated) {
		page.NextToken = aws.ToString(out.NextContinuationToken)
		if page.NextToken == "" {
			return store.ListPage{}, errors.New("s3: truncated listing without a continuation token")
		}
	}
	return page, nil
}

// version turns an ETag into a Version, always in its quoted form, since
// some services quote ETags in one response and not in another; "" when
// the response had none.
func version(etag *string) store.Version {
	e := strings.TrimSpace(aws.ToString(etag))
	if e == "" || e == `""` {
		return ""
	}
	if !strings.HasPrefix(e, `"`) && !strings.HasPrefix(e, `W/"`) {
		e = `"` + e + `"`
	}
	return store.Version(e)
}
