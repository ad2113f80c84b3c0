package store

import (
	"context"
	"io"
	"reflect"
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
// outermost. A *Bucket, or a Store that embeds one directly (every
// adapter), is unwrapped to its Driver; any other Store (a test fake, a
// type embedding an adapter, a third-party Store) is first adapted with
// DriverOf (see DriverFor).
func Wrap(s Store, mws ...Middleware) *Bucket {
	d := DriverFor(s)
	for _, mw := range mws {
		d = mw(d)
	}
	return NewBucket(d)
}

// DriverFor returns the Driver under s: the Driver of s itself when s is a
// *Bucket or a struct that embeds one directly (an adapter's type, with
// its own fields beside), DriverOf(s) for any other Store. A type that
// embeds an adapter to override some of its methods (a test double that
// counts puts, fails whole-object reads, ...) is adapted with DriverOf, so
// that its overrides stay in the path; a type that embeds *Bucket itself
// must not override the Bucket's methods (write a Middleware instead).
func DriverFor(s Store) Driver {
	if b := ownBucket(s); b != nil {
		return b.d
	}
	return DriverOf(s)
}

var bucketType = reflect.TypeFor[*Bucket]()

// ownBucket returns s when it is a *Bucket, the *Bucket a struct (or a
// pointer to one) embeds as a field of its own, or nil.
func ownBucket(s Store) *Bucket {
	if b, ok := s.(*Bucket); ok {
		return b
	}
	v := reflect.ValueOf(s)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.Anonymous && f.Type == bucketType {
			b, _ := v.Field(i).Interface().(*Bucket)
			return b
		}
	}
	return nil
}

// DriverOf adapts a Store written against the Store interface directly
// into a Driver: a Bucket's whole-object Get and Put reach the Store's own
// Get and Put; streaming, body-only reads and copies go through the
// Store's optional interfaces when it has them and fall back to whole
// objects otherwise (the one place those fallbacks are written). Its
// errors are the Store's own, already portable.
func DriverOf(s Store) Driver { return storeDriver{s} }

type storeDriver struct{ s Store }

func (d storeDriver) NewRangeReader(ctx context.Context, key string, offset, length int64, dataOnly bool) (*Reader, error) {
	var o *Object
	var err error
	switch st, streams := d.s.(Streamer); {
	case dataOnly:
		o, err = GetData(ctx, d.s, key)
	case isWhole(ctx):
		o, err = d.s.Get(ctx, key)
	case streams:
		return st.NewRangeReader(ctx, key, offset, length)
	default:
		o, err = d.s.Get(ctx, key)
	}
	if err != nil {
		return nil, err
	}
	return ReaderOf(o, offset, length)
}

// PutFrom streams into the Store, except for a Bucket's whole-object Put,
// which reaches the Store's own Put (the body still read here, through
// whatever the middlewares made of it).
func (d storeDriver) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Version, error) {
	if !isWhole(ctx) {
		return PutFrom(ctx, d.s, key, r, size, opts)
	}
	data, err := ReadBody(ctx, "put", key, r, size)
	if err != nil {
		return "", err
	}
	return d.s.Put(ctx, key, data, opts)
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
