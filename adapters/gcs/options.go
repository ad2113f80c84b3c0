package gcs

import (
	"fmt"
)

// Options configure a Store. A Store covers a whole bucket; wrap it with
// store.WithPrefix to keep its keys under a prefix.
type Options struct {
	// Bucket is the bucket name (required).
	Bucket string
	// Endpoint overrides the JSON API endpoint, e.g.
	// "http://127.0.0.1:4443/storage/v1/" for fake-gcs-server (uploads go
	// to the "upload/storage/v1/" beside it). Without it the adapter
	// honours STORAGE_EMULATOR_HOST, as every Google client does (requests
	// then go to http://$STORAGE_EMULATOR_HOST without credentials), and
	// otherwise speaks to the service itself.
	Endpoint string
	// Anonymous sends requests without credentials, as emulators expect.
	// Otherwise Application Default Credentials are used.
	Anonymous bool
	// CredentialsFile names a credentials JSON file (a service account
	// key, an authorized user, an external account) to use instead of
	// Application Default Credentials.
	CredentialsFile string
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
