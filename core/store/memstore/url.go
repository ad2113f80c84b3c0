package memstore

import (
	"context"
	"sync"

	"github.com/cellb/cellb/core/store"
)

// Scheme is the URL scheme of in-memory buckets: mem://NAME[/PREFIX].
const Scheme = "mem"

// URLOpener opens mem://NAME[/PREFIX] URLs: one in-memory bucket per
// name, made on its first open and shared by every later open through the
// same URLOpener, so two clients of one test see one bucket. Buckets live
// as long as the URLOpener. It is for tests; a program that serves real
// data registers no mem scheme.
type URLOpener struct {
	// Options are given to New for every bucket the opener makes.
	Options []Option

	mu      sync.Mutex
	buckets map[string]*Store
}

// Register adds the mem scheme to m, opened by a new URLOpener, and
// returns that opener (its Bucket method reaches the buckets).
func Register(m *store.URLMux) *URLOpener {
	o := &URLOpener{}
	o.Register(m)
	return o
}

// Register adds the mem scheme to m, opened by o.
func (o *URLOpener) Register(m *store.URLMux) {
	m.Register(store.URLScheme{Name: Scheme, Form: "mem://name[/prefix]", Opener: o})
}

// Bucket returns the bucket called name, making it if it does not exist.
func (o *URLOpener) Bucket(name string) *Store {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.buckets == nil {
		o.buckets = map[string]*Store{}
	}
	b, ok := o.buckets[name]
	if !ok {
		b = New(o.Options...)
		o.buckets[name] = b
	}
	return b
}

// OpenBucketURL returns the bucket the URL names (the mux applies the
// prefix).
func (o *URLOpener) OpenBucketURL(_ context.Context, u *store.BucketURL) (store.Store, error) {
	return o.Bucket(u.Bucket), nil
}
