package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/store"
)

// bucketScheme opens the buckets of one URL scheme.
type bucketScheme struct {
	// open returns a store on the whole bucket; openBucket applies the
	// URL's prefix on top, so openers never deal with it.
	open func(ctx context.Context, loc bucketLocation) (store.Store, error)
	// form is the URL shape shown in help and errors.
	form string
	// hasPrefix: the URL is scheme://NAME[/PREFIX] (clouds). Without it the
	// URL's path is a local directory (file).
	hasPrefix bool
}

// bucketLocation is a parsed bucket URL.
type bucketLocation struct {
	URL *url.URL
	// Bucket is the bucket or container name (cloud schemes).
	Bucket string
	// Dir is the local directory (file scheme).
	Dir string
	// Prefix is the key prefix, without leading or trailing '/'.
	Prefix string
}

// bucketSchemes is the table of supported URL schemes. A new kind of
// bucket adds one line here and its opener in its own file
// (bucket_s3.go, bucket_gcs.go, ...).
func bucketSchemes() map[string]bucketScheme {
	return map[string]bucketScheme{
		"file": {open: openFileBucket, form: "file:///path/to/dir (or a plain path)"},
		"s3":   {open: openS3Bucket, form: s3Form, hasPrefix: true},
		"gs":   {open: openGCSBucket, form: gcsForm, hasPrefix: true},
		"az":   {open: openAzureBucket, form: azureForm, hasPrefix: true},
	}
}

// errBucketURL marks a malformed or unsupported bucket URL.
var errBucketURL = errors.New("bad bucket URL")

// openBucket opens the bucket rawURL names: scheme://NAME[/PREFIX] for the
// schemes in the table, file:///dir, or a plain directory path. Every
// error is one line.
func openBucket(ctx context.Context, rawURL string, schemes map[string]bucketScheme) (store.Store, error) {
	scheme, loc, err := parseBucketURL(rawURL, schemes)
	if err != nil {
		return nil, err
	}
	s, err := scheme.open(ctx, loc)
	if err != nil {
		return nil, oneLine(err)
	}
	if loc.Prefix == "" {
		return s, nil
	}
	ps, err := store.WithPrefix(s, loc.Prefix)
	if err != nil {
		_ = store.Close(s)
		return nil, fmt.Errorf("%w %q: %v", errBucketURL, rawURL, err)
	}
	return ps, nil
}

func parseBucketURL(raw string, schemes map[string]bucketScheme) (bucketScheme, bucketLocation, error) {
	bad := func(format string, args ...any) (bucketScheme, bucketLocation, error) {
		return bucketScheme{}, bucketLocation{}, fmt.Errorf("%w %q: %s", errBucketURL, raw, fmt.Sprintf(format, args...))
	}
	if strings.TrimSpace(raw) == "" {
		return bad("empty")
	}
	if !strings.Contains(raw, "://") {
		// A plain path names a local directory.
		fileScheme, ok := schemes["file"]
		if !ok {
			return bad("local directories are not supported by this build")
		}
		abs, err := filepath.Abs(raw)
		if err != nil {
			return bad("%v", err)
		}
		return fileScheme, bucketLocation{URL: &url.URL{Scheme: "file", Path: abs}, Dir: abs}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return bad("%v", err)
	}
	name := strings.ToLower(u.Scheme)
	scheme, ok := schemes[name]
	if !ok {
		return bad("unknown scheme %q (supported: %s)", u.Scheme, supportedForms(schemes))
	}
	if u.User != nil {
		return bad("credentials do not belong in the URL; use the environment")
	}
	if u.Fragment != "" || u.Opaque != "" {
		return bad("unexpected %q", u.Fragment+u.Opaque)
	}
	if !scheme.hasPrefix {
		if u.Host != "" && u.Host != "localhost" {
			return bad("a file URL names a local directory: use file:///path (three slashes)")
		}
		if u.RawQuery != "" {
			return bad("a file URL takes no query")
		}
		if u.Path == "" {
			return bad("no directory")
		}
		return scheme, bucketLocation{URL: u, Dir: filepath.Clean(u.Path)}, nil
	}
	if u.Host == "" {
		return bad("no bucket name (want %s)", scheme.form)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		if i := strings.IndexFunc(prefix, func(r rune) bool { return !prefixRune(r) }); i >= 0 {
			return bad("prefix %q may hold only A-Z, a-z, 0-9 and - _ . / (as celld requires)", prefix)
		}
		if err := store.ValidatePrefix(prefix); err != nil {
			return bad("prefix %q: %v", prefix, err)
		}
	}
	return scheme, bucketLocation{URL: u, Bucket: u.Host, Prefix: prefix}, nil
}

// prefixRune is celld's alphabet for bucket prefixes.
func prefixRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./", r)
}

func supportedForms(schemes map[string]bucketScheme) string {
	var forms []string
	for _, s := range schemes {
		forms = append(forms, s.form)
	}
	slices.Sort(forms)
	return strings.Join(forms, ", ")
}

// oneLine keeps only the first line of an error, for messages on a
// terminal.
func oneLine(err error) error {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		return fmt.Errorf("%s", msg[:i])
	}
	return err
}

// openFileBucket opens a local directory as a bucket. The directory must
// exist: a mistyped path should fail, not grow a new bucket.
func openFileBucket(_ context.Context, loc bucketLocation) (store.Store, error) {
	return fsstore.Open(loc.Dir)
}
