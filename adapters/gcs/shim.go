package gcs

// TEMPORARY: the portable rules over the driver until store.NewBucket is
// on main; then Store embeds *store.Bucket and this file goes.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cellb/cellb/core/store"
)

type shimBucket struct{ d store.Driver }

var (
	_ store.Store      = (*Store)(nil)
	_ store.Streamer   = (*Store)(nil)
	_ store.Copier     = (*Store)(nil)
	_ store.DataGetter = (*Store)(nil)
)

func (b *shimBucket) Close() error { return b.d.Close() }

// wrap turns a driver error into the portable one.
func (b *shimBucket) wrap(op, key string, write, conditional bool, err error) error {
	var oe *store.OpError
	if errors.As(err, &oe) {
		return err
	}
	for _, k := range []error{store.ErrNotFound, store.ErrPreconditionFailed, store.ErrInvalidRange, store.ErrInvalidKey} {
		if errors.Is(err, k) {
			return &store.OpError{Op: op, Key: key, Err: err}
		}
	}
	c := b.d.Classify(err)
	var kind error
	switch c.Kind {
	case store.KindAccessDenied:
		return &store.OpError{Op: op, Key: key, Err: &store.RefusedError{Kind: store.ErrAccessDenied, Status: c.Status, Code: c.Code, Hint: c.Hint, Err: err}}
	case store.KindBucketNotFound:
		return &store.OpError{Op: op, Key: key, Err: &store.RefusedError{Kind: store.ErrBucketNotFound, Status: c.Status, Code: c.Code, Hint: c.Hint, Err: err}}
	case store.KindNotFound:
		kind = store.ErrNotFound
	case store.KindPreconditionFailed:
		kind = store.ErrPreconditionFailed
	case store.KindInvalidRange:
		kind = store.ErrInvalidRange
	case store.KindInvalidKey:
		kind = store.ErrInvalidKey
	}
	if write && kind != store.ErrPreconditionFailed && kind != store.ErrInvalidKey && !(c.Kind == store.KindRejected && !conditional) {
		return store.Ambiguous(op, key, err)
	}
	if kind != nil {
		err = fmt.Errorf("%w: %w", kind, err)
	}
	return &store.OpError{Op: op, Key: key, Err: err}
}

func (b *shimBucket) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	return b.open(ctx, key, offset, length, false)
}

func (b *shimBucket) open(ctx context.Context, key string, offset, length int64, dataOnly bool) (*store.Reader, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("%w (offset %d)", store.ErrInvalidRange, offset)}
	}
	r, err := b.d.NewRangeReader(ctx, key, offset, length, dataOnly)
	if err != nil && b.d.Classify(err).Kind == store.KindTransient {
		r, err = b.d.NewRangeReader(ctx, key, offset, length, dataOnly)
	}
	if err != nil {
		return nil, b.wrap("get", key, false, false, err)
	}
	return r, nil
}

func (b *shimBucket) read(ctx context.Context, key string, dataOnly bool) (*store.Object, error) {
	r, err := b.open(ctx, key, 0, -1, dataOnly)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err == nil && int64(len(data)) != r.Length {
		err = fmt.Errorf("read %d of %d bytes", len(data), r.Length)
	}
	if err != nil {
		return nil, &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("reading body: %w", err)}
	}
	return &store.Object{Key: key, Data: data, Version: r.Version, Metadata: r.Metadata, Headers: r.Headers, Modified: r.Modified}, nil
}

func (b *shimBucket) Get(ctx context.Context, key string) (*store.Object, error) {
	return b.read(ctx, key, false)
}

func (b *shimBucket) GetData(ctx context.Context, key string) (*store.Object, error) {
	return b.read(ctx, key, true)
}

func (b *shimBucket) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	return b.PutFrom(ctx, key, bytes.NewReader(data), int64(len(data)), opts)
}

type trackedBody struct {
	r    io.Reader
	eof  bool
	fail error
}

func (t *trackedBody) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err == io.EOF {
		t.eof = true
	} else if err != nil {
		t.fail = err
	}
	return n, err
}

func (b *shimBucket) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	if err := store.CheckPut(ctx, key, opts); err != nil {
		return "", err
	}
	body := &trackedBody{r: store.Body(ctx, r, size)}
	v, err := b.d.PutFrom(ctx, key, body, size, opts)
	if err == nil {
		return v, nil
	}
	if body.fail != nil || !body.eof {
		var oe *store.OpError
		if errors.As(err, &oe) {
			return "", err
		}
		if body.fail != nil {
			return "", store.BodyError("put", key, body.fail)
		}
		if c := b.d.Classify(err); c.Kind == store.KindPreconditionFailed || c.Kind == store.KindAccessDenied || c.Kind == store.KindBucketNotFound {
			return "", b.wrap("put", key, true, opts.Condition.IsConditional(), err)
		}
		return "", &store.OpError{Op: "put", Key: key, Err: err}
	}
	return "", b.wrap("put", key, true, opts.Condition.IsConditional(), err)
}

func (b *shimBucket) Delete(ctx context.Context, key string) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	if err := b.d.Delete(ctx, key); err != nil {
		return b.wrap("delete", key, false, false, err)
	}
	return nil
}

func (b *shimBucket) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	if err := store.ValidatePrefix(opts.Prefix); err != nil {
		return store.ListPage{}, err
	}
	if opts.Limit <= 0 || opts.Limit > 1000 {
		opts.Limit = 1000
	}
	p, err := b.d.List(ctx, opts)
	if err != nil {
		return store.ListPage{}, b.wrap("list", opts.Prefix, false, false, err)
	}
	return p, nil
}

func (b *shimBucket) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	if err := store.ValidateKey(src); err != nil {
		return "", err
	}
	if err := store.ValidateKey(dst); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", &store.OpError{Op: "copy", Key: dst, Err: err}
	}
	v, err := b.d.Copy(ctx, src, dst)
	if errors.Is(err, store.ErrCopyUnsupported) {
		return store.CopyByStreaming(ctx, b, src, dst)
	}
	if err != nil {
		c := b.d.Classify(err)
		if c.Kind == store.KindNotFound {
			return "", &store.OpError{Op: "copy", Key: src, Err: fmt.Errorf("%w: %w", store.ErrNotFound, err)}
		}
		return "", b.wrap("copy", dst, true, true, err)
	}
	return v, nil
}
