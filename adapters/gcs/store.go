package gcs

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/cellb/cellb/core/store"
)

// Store is a store.Store on one GCS bucket: the portable bucket over this
// package's driver.
type Store struct {
	*store.Bucket
}

var _ store.Store = (*Store)(nil)

// New opens a Store with opts' credentials and endpoint. Close the Store
// to release its connections.
func New(ctx context.Context, opts Options) (*Store, error) {
	return newStore(ctx, opts, os.Getenv)
}

func newStore(ctx context.Context, opts Options, getenv func(string) string) (*Store, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	ep, anonymous := endpoint(opts, getenv)
	t := newTransport()
	hc := &http.Client{Transport: t}
	if !anonymous {
		var err error
		if hc, err = authorized(ctx, opts, t); err != nil {
			return nil, err
		}
	}
	d := newDriver(hc, ep, opts.Bucket)
	d.streamCopies = opts.StreamCopies
	d.transport = t
	return storeOf(d), nil
}

// NewFromHTTPClient opens a Store that sends every request through hc as
// it is: hc adds the credentials (an oauth2 client, say) or the endpoint
// needs none. opts give the bucket, the endpoint (STORAGE_EMULATOR_HOST
// otherwise, then the service) and StreamCopies; Anonymous and
// CredentialsFile are not used. The caller keeps hc: Close leaves it open.
func NewFromHTTPClient(hc *http.Client, opts Options) (*Store, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if hc == nil {
		return nil, fmt.Errorf("gcs: NewFromHTTPClient: the client is nil")
	}
	ep, _ := endpoint(opts, os.Getenv)
	d := newDriver(hc, ep, opts.Bucket)
	d.streamCopies = opts.StreamCopies
	return storeOf(d), nil
}

func storeOf(d *driver) *Store {
	return &Store{Bucket: store.NewBucket(d)}
}
