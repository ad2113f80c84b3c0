package s3

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/cellb/cellb/core/store"
)

// Scheme is the URL scheme of S3 buckets.
const Scheme = "s3"

// URLForm is the shape of an s3 bucket URL.
const URLForm = "s3://bucket[/prefix][?endpoint=URL&region=R&path-style=true|false]"

// URLOpener opens s3://BUCKET[/PREFIX] URLs. Query parameters, each
// winning over the environment:
//
//   - endpoint: the service URL, for S3-compatible services; also from
//     AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL.
//   - region: the region; otherwise the SDK's own (AWS_REGION, shared
//     config).
//   - path-style: true or false; also from CELLB_S3_PATH_STYLE. On by
//     default whenever an endpoint is given (self-hosted services rarely
//     have per-bucket DNS names).
//
// Credentials come from the standard AWS chain (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, web identity, instance roles)
// unless Options.Credentials is set; AWS_REQUEST_CHECKSUM_CALCULATION=
// when_required is honoured for services that reject the SDK's default
// checksums.
type URLOpener struct {
	// Options is the starting point: the URL sets Bucket, and Endpoint,
	// Region and UsePathStyle when it or the environment gives them.
	// Credentials, part sizes and the like are kept as they are.
	Options Options
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
}

// Register adds the s3 scheme to m, opened by a zero URLOpener.
func Register(m *store.URLMux) { URLOpener{}.Register(m) }

// Register adds the s3 scheme to m, opened by o.
func (o URLOpener) Register(m *store.URLMux) {
	m.Register(store.URLScheme{Name: Scheme, Form: URLForm, Params: []string{"endpoint", "region", "path-style"}, Opener: o})
}

// OpenBucketURL opens the URL's bucket with New (the mux applies the
// prefix).
func (o URLOpener) OpenBucketURL(ctx context.Context, u *store.BucketURL) (store.Store, error) {
	opts, err := o.URLOptions(u)
	if err != nil {
		return nil, err
	}
	return New(ctx, opts)
}

// URLOptions returns the Options OpenBucketURL would open u with.
func (o URLOpener) URLOptions(u *store.BucketURL) (Options, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	opts := o.Options
	opts.Bucket = u.Bucket
	if r := u.Query["region"]; r != "" {
		opts.Region = r
	}
	if ep := cmp.Or(u.Query["endpoint"], getenv("AWS_ENDPOINT_URL_S3"), getenv("AWS_ENDPOINT_URL")); ep != "" {
		opts.Endpoint = ep
		opts.UsePathStyle = true
	}
	if v, ok := u.Query["path-style"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Options{}, u.Errorf("path-style %q: want true or false", v)
		}
		opts.UsePathStyle = b
	} else if v := getenv("CELLB_S3_PATH_STYLE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Options{}, fmt.Errorf("s3: CELLB_S3_PATH_STYLE=%q: want true or false", v)
		}
		opts.UsePathStyle = b
	}
	return opts, nil
}
