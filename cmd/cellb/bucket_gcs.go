package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cellb/cellb/adapters/gcs"
	"github.com/cellb/cellb/core/store"
)

const gcsForm = "gs://bucket[/prefix][?endpoint=URL&anonymous=true|false]"

// openGCSBucket opens a gs:// URL with Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's login, the metadata server).
// STORAGE_EMULATOR_HOST points every Google client, this one included, at
// an emulator.
func openGCSBucket(ctx context.Context, loc bucketLocation) (store.Store, error) {
	opts, err := gcsOptions(loc, os.Getenv)
	if err != nil {
		return nil, err
	}
	return gcs.New(ctx, opts)
}

// gcsOptions reads the URL's query and CELLB_GCS_ENDPOINT: an explicit
// endpoint (the base URL of the service, e.g. http://127.0.0.1:4443);
// requests are anonymous when ?anonymous=true, or by default when the
// endpoint is on this machine (an emulator).
func gcsOptions(loc bucketLocation, getenv func(string) string) (gcs.Options, error) {
	q, err := queryParams(loc, "endpoint", "anonymous")
	if err != nil {
		return gcs.Options{}, err
	}
	opts := gcs.Options{Bucket: loc.Bucket}
	if ep := firstNonEmpty(q["endpoint"], getenv("CELLB_GCS_ENDPOINT")); ep != "" {
		opts.Endpoint = strings.TrimSuffix(ep, "/") + "/storage/v1/"
		opts.Anonymous = isLoopbackURL(ep)
	}
	if v := q["anonymous"]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return gcs.Options{}, fmt.Errorf("anonymous %q: want true or false", v)
		}
		opts.Anonymous = b
	}
	return opts, nil
}

// isLoopbackURL reports an http(s) URL whose host is this machine.
func isLoopbackURL(raw string) bool {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return false
	}
	host, _, _ := strings.Cut(rest, "/")
	if h, _, ok := strings.Cut(host, ":"); ok && !strings.HasPrefix(host, "[") {
		host = h
	}
	return host == "localhost" || strings.HasPrefix(host, "127.") || strings.HasPrefix(host, "[::1]")
}
