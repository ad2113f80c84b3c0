package store

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// WithPrefix returns a Store that keeps every key of s under prefix, so one
// bucket can hold several independent key spaces (a bucket URL such as
// s3://bucket/team/app names one). Callers see keys relative to the prefix:
// Put("a") writes "<prefix>/a" and List reports it as "a". The prefix is
// normalised to end with '/'; an empty prefix returns s unchanged.
// Otherwise the result is Wrap(s) with the prefix as a Middleware.
//
// Keys are validated (by the Bucket) before the prefix is added, so a
// relative key can never climb out of its prefix.
func WithPrefix(s Store, prefix string) (Store, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return s, nil
	}
	if err := ValidateKey(prefix); err != nil {
		return nil, fmt.Errorf("bucket prefix: %w", err)
	}
	p := prefix + "/"
	return Wrap(s, func(d Driver) Driver { return &prefixed{inner: d, prefix: p} }), nil
}

// prefixed is the Middleware of WithPrefix.
type prefixed struct {
	inner  Driver
	prefix string
}

// key returns the inner key of a (valid) relative key, checked whole: the
// prefix may make it longer than a key may be.
func (p *prefixed) key(key string) (string, error) {
	full := p.prefix + key
	if err := ValidateKey(full); err != nil {
		return "", err
	}
	return full, nil
}

func (p *prefixed) NewRangeReader(ctx context.Context, key string, offset, length int64, dataOnly bool) (*Reader, error) {
	full, err := p.key(key)
	if err != nil {
		return nil, err
	}
	return p.inner.NewRangeReader(ctx, full, offset, length, dataOnly)
}

func (p *prefixed) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Version, error) {
	full, err := p.key(key)
	if err != nil {
		return "", err
	}
	return p.inner.PutFrom(ctx, full, r, size, opts)
}

func (p *prefixed) Delete(ctx context.Context, key string) error {
	full, err := p.key(key)
	if err != nil {
		return err
	}
	return p.inner.Delete(ctx, full)
}

func (p *prefixed) List(ctx context.Context, opts ListOptions) (ListPage, error) {
	rel := opts.Prefix
	opts.Prefix = p.prefix + rel
	page, err := p.inner.List(ctx, opts)
	if err != nil {
		return ListPage{}, err
	}
	for i, o := range page.Objects {
		k, ok := strings.CutPrefix(o.Key, p.prefix)
		if !ok {
			return ListPage{}, &OpError{Op: "list", Key: rel, Err: fmt.Errorf("store listed %q outside prefix %q", o.Key, p.prefix)}
		}
		page.Objects[i].Key = k
	}
	for i, cp := range page.Prefixes {
		k, ok := strings.CutPrefix(cp, p.prefix)
		if !ok {
			return ListPage{}, &OpError{Op: "list", Key: rel, Err: fmt.Errorf("store listed prefix %q outside prefix %q", cp, p.prefix)}
		}
		page.Prefixes[i] = k
	}
	return page, nil
}

// Copy copies inside the prefix: both keys are under it.
func (p *prefixed) Copy(ctx context.Context, src, dst string) (Version, error) {
	fsrc, err := p.key(src)
	if err != nil {
		return "", err
	}
	fdst, err := p.key(dst)
	if err != nil {
		return "", err
	}
	return p.inner.Copy(ctx, fsrc, fdst)
}

func (p *prefixed) Classify(err error) ErrorClass { return p.inner.Classify(err) }

func (p *prefixed) Close() error { return p.inner.Close() }
