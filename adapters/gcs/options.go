package gcs

import (
	"fmt"

	"google.golang.org/api/option"
)

// Options configure a Store. A Store covers a whole bucket; wrap it with
// store.WithPrefix to keep its keys under a prefix.
type Options struct {
	// Bucket is the bucket name (required).
	Bucket string
	// Endpoint overrides the JSON API endpoint, e.g.
	// "http://127.0.0.1:4443/storage/v1/" for fake-gcs-server. Without it
	// the client honours STORAGE_EMULATOR_HOST, as every Google client does.
	Endpoint string
	// Anonymous sends requests without credentials, as emulators expect.
	// Otherwise Application Default Credentials are used.
	Anonymous bool
	// ClientOptions are passed to storage.NewClient after the ones above
	// (credentials files, token sources, HTTP clients). Do not pass
	// storage.WithJSONReads: Get takes the metadata from the XML read
	// path's headers, and JSON reads do not carry it.
	ClientOptions []option.ClientOption
	// StreamCopies makes Copy read the source and write the destination
	// through this client instead of rewriting it inside the service. Only
	// for emulators: fake-gcs-server 1.56 ignores the destination's
	// ifGenerationMatch=0 on a rewrite, so a server-side copy there would
	// replace an existing object.
	StreamCopies bool
}

func (o Options) check() error {
	if o.Bucket == "" {
		return fmt.Errorf("gcs: Options.Bucket is empty")
	}
	return nil
}

func (o Options) clientOptions() []option.ClientOption {
	var opts []option.ClientOption
	if o.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(o.Endpoint))
	}
	if o.Anonymous {
		opts = append(opts, option.WithoutAuthentication())
	}
	return append(opts, o.ClientOptions...)
}
