package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/cellb/cellb/adapters/s3"
	"github.com/cellb/cellb/core/store"
)

// s3 URL options: s3://BUCKET[/PREFIX][?endpoint=URL&region=R&path-style=B].
// Query parameters win over the environment.
const s3Form = "s3://bucket[/prefix][?endpoint=URL&region=R&path-style=true|false]"

// openS3Bucket opens an s3:// URL. Credentials come from the standard AWS
// chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, web
// identity, instance roles); AWS_REQUEST_CHECKSUM_CALCULATION=when_required
// is honoured for services that reject the SDK's default checksums.
func openS3Bucket(ctx context.Context, loc bucketLocation) (store.Store, error) {
	opts, err := s3Options(loc, os.Getenv)
	if err != nil {
		return nil, err
	}
	return s3.New(ctx, opts)
}

// s3Options reads the URL's query and the environment: the endpoint from
// ?endpoint=, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL; the region from
// ?region= or the SDK's own AWS_REGION handling; path-style addressing from
// ?path-style= or CELLB_S3_PATH_STYLE, on by default when an endpoint is
// given (self-hosted services rarely have per-bucket DNS names).
func s3Options(loc bucketLocation, getenv func(string) string) (s3.Options, error) {
	q, err := queryParams(loc, "endpoint", "region", "path-style")
	if err != nil {
		return s3.Options{}, err
	}
	opts := s3.Options{Bucket: loc.Bucket, Region: q["region"]}
	opts.Endpoint = firstNonEmpty(q["endpoint"], getenv("AWS_ENDPOINT_URL_S3"), getenv("AWS_ENDPOINT_URL"))
	opts.UsePathStyle = opts.Endpoint != ""
	if v := firstNonEmpty(q["path-style"], getenv("CELLB_S3_PATH_STYLE")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return s3.Options{}, fmt.Errorf("path-style %q: want true or false", v)
		}
		opts.UsePathStyle = b
	}
	return opts, nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// queryParams returns the URL's query as single values, refusing names
// outside allowed (a typo must not be silently ignored) and repeated names.
func queryParams(loc bucketLocation, allowed ...string) (map[string]string, error) {
	out := map[string]string{}
	if loc.URL == nil {
		return out, nil
	}
	for name, vals := range loc.URL.Query() {
		ok := false
		for _, a := range allowed {
			ok = ok || a == name
		}
		if !ok {
			return nil, fmt.Errorf("%w: unknown parameter %q (known: %v)", errBucketURL, name, allowed)
		}
		if len(vals) != 1 {
			return nil, fmt.Errorf("%w: parameter %q given %d times", errBucketURL, name, len(vals))
		}
		out[name] = vals[0]
	}
	return out, nil
}
