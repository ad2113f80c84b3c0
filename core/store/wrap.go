package store

import (
	"context"
	"io"
)

// Middleware wraps a Driver to add one concern to every backend at once:
// a key prefix, metrics, read progress, fault injection. A middleware
// implements every Driver method (there are no optional ones to forward),
// calls the inner driver with arguments the Bucket has already checked,
// and returns its inner driver's errors unchanged, delegating Classify to
// it, so the Bucket's rules apply to the whole stack. Errors a middleware
// makes itself carry a portable kind.
type Middleware func(Driver) Driver

// Wrap returns s with mws applied around its driver, the last one
// outermost. A Store that embeds a *Bucket (every adapter) is unwrapped
// to its Driver; any other Store (a test fake, a third-party Store) is
// first adapted with DriverOf.
func Wrap(s Store, mws ...Middleware) *Bucket {
	d := DriverFor(s)
	for _, mw := range mws {
		d = mw(d)
	}
	return NewBucket(d)
}

// DriverFor returns the Driver under s: the Driver of the Bucket s embeds,
// or DriverOf(s).
func DriverFor(s Store) Driver {
	if bh, ok := s.(interface{ Bucket() *Bucket }); ok {
		return bh.Bucket().Driver()
	}
	return DriverOf(s)
}

// DriverOf adapts a Store written against the Store interface directly
// into a Driver: streaming, body-only reads and copies go through the
// Store's optional interfaces when it has them and fall back to whole
// objects otherwise (the one place those fallbacks are written). Its
// errors are the Store's own, already portable.
func DriverOf(s Store) Driver { return storeDriver{s} }

type storeDriver struct{ s Store }

func (d storeDriver) NewRangeReader(ctx context.Context, key string, offset, length int64, dataOnly bool) (*Reader, error) {
	if st, ok := d.s.(Streamer); ok {
		return st.NewRangeReader(ctx, key, offset, length)
	}
	var o *Object
	var err error
	if dataOnly {
		o, err = GetData(ctx, d.s, key)
	} else {
		o, err = d.s.Get(ctx, key)
	}
	if err != nil {
		return nil, err
	}
	return ReaderOf(o, offset, length)
}

func (d storeDriver) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Version, error) {
	return PutFrom(ctx, d.s, key, r, size, opts)
}

func (d storeDriver) Delete(ctx context.Context, key string) error { return d.s.Delete(ctx, key) }

func (d storeDriver) List(ctx context.Context, opts ListOptions) (ListPage, error) {
	return d.s.List(ctx, opts)
}

func (d storeDriver) Copy(ctx context.Context, src, dst string) (Version, error) {
	if c, ok := d.s.(Copier); ok {
		return c.Copy(ctx, src, dst)
	}
	return "", ErrCopyUnsupported
}

func (d storeDriver) Classify(error) ErrorClass { return ErrorClass{} }

func (d storeDriver) Close() error { return Close(d.s) }
