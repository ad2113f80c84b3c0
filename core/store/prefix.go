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
//
// Keys are validated before the prefix is added, so a relative key can
// never climb out of its prefix.
func WithPrefix(s Store, prefix string) (Store, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return s, nil
	}
	if err := ValidateKey(prefix); err != nil {
		return nil, fmt.Errorf("bucket prefix: %w", err)
	}
	return &prefixed{inner: s, prefix: prefix + "/"}, nil
}

type prefixed struct {
	inner  Store
	prefix string
}

func (p *prefixed) Get(ctx context.Context, key string) (*Object, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	o, err := p.inner.Get(ctx, p.prefix+key)
	if err != nil {
		return nil, err
	}
	out := *o
	out.Key = key
	return &out, nil
}

func (p *prefixed) Put(ctx context.Context, key string, data []byte, opts PutOptions) (Version, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return p.inner.Put(ctx, p.prefix+key, data, opts)
}

func (p *prefixed) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	return p.inner.Delete(ctx, p.prefix+key)
}

func (p *prefixed) List(ctx context.Context, opts ListOptions) (ListPage, error) {
	if err := ValidatePrefix(opts.Prefix); err != nil {
		return ListPage{}, err
	}
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

// Close closes the wrapped store.
func (p *prefixed) Close() error { return Close(p.inner) }

// GetData implements DataGetter through the wrapped store.
func (p *prefixed) GetData(ctx context.Context, key string) (*Object, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	o, err := GetData(ctx, p.inner, p.prefix+key)
	if err != nil {
		return nil, err
	}
	out := *o
	out.Key = key
	return &out, nil
}

// NewRangeReader implements Streamer by streaming from the wrapped store.
func (p *prefixed) NewRangeReader(ctx context.Context, key string, offset, length int64) (*Reader, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	r, err := NewRangeReader(ctx, p.inner, p.prefix+key, offset, length)
	if err != nil {
		return nil, err
	}
	r.Key = key
	return r, nil
}

// PutFrom implements Streamer by streaming into the wrapped store.
func (p *prefixed) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Version, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return PutFrom(ctx, p.inner, p.prefix+key, r, size, opts)
}

// Copy implements Copier through the wrapped store, with both keys under
// the prefix.
func (p *prefixed) Copy(ctx context.Context, src, dst string) (Version, error) {
	if err := ValidateKey(src); err != nil {
		return "", err
	}
	if err := ValidateKey(dst); err != nil {
		return "", err
	}
	return Copy(ctx, p.inner, p.prefix+src, p.prefix+dst)
}
