package gcs

import (
	"cmp"
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/cellb/cellb/core/store"
)

// Scheme is the URL scheme of Google Cloud Storage buckets.
const Scheme = "gs"

// URLForm is the shape of a gs bucket URL.
const URLForm = "gs://bucket[/prefix][?endpoint=URL&anonymous=true|false]"

// URLOpener opens gs://BUCKET[/PREFIX] URLs. Query parameters:
//
//   - endpoint: the base URL of the service (e.g. http://127.0.0.1:4443
//     for fake-gcs-server; "/storage/v1/" is added); also from
//     CELLB_GCS_ENDPOINT, which the query wins over.
//   - anonymous: true or false: send requests without credentials. By
//     default requests are anonymous exactly when the endpoint is on this
//     machine (an emulator).
//
// Credentials come from Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's login, the metadata server);
// STORAGE_EMULATOR_HOST points this client, like every Google client, at
// an emulator.
type URLOpener struct {
	// Options is the starting point: the URL sets Bucket, and Endpoint and
	// Anonymous when it or the environment gives them; CredentialsFile and
	// StreamCopies are kept.
	Options Options
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
}

// Register adds the gs scheme to m, opened by a zero URLOpener.
func Register(m *store.URLMux) { URLOpener{}.Register(m) }

// Register adds the gs scheme to m, opened by o.
func (o URLOpener) Register(m *store.URLMux) {
	m.Register(store.URLScheme{Name: Scheme, Form: URLForm, Params: []string{"endpoint", "anonymous"}, Opener: o})
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
	if ep := cmp.Or(u.Query["endpoint"], getenv("CELLB_GCS_ENDPOINT")); ep != "" {
		opts.Endpoint = strings.TrimSuffix(ep, "/") + "/storage/v1/"
		opts.Anonymous = isLoopbackURL(ep)
	}
	if v, ok := u.Query["anonymous"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Options{}, u.Errorf("anonymous %q: want true or false", v)
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
