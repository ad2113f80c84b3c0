package brokenstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"

	"github.com/cellb/cellb/core/store"
)

// DropsHeaders stores objects without their Content-Disposition, like an
// adapter that forgets to map one header.
func DropsHeaders(s store.Store) store.Store { return &dropsHeaders{streamer{wrapper{s}}, false} }

// DropsHeadersOnReplace stores the headers of plain and create-only writes
// but not of compare-and-swap ones, like an adapter whose conditional
// upload path builds its request separately.
func DropsHeadersOnReplace(s store.Store) store.Store {
	return &dropsHeaders{streamer{wrapper{s}}, true}
}

type dropsHeaders struct {
	streamer
	onReplace bool
}

func (b *dropsHeaders) strip(opts store.PutOptions) store.PutOptions {
	if !b.onReplace {
		opts.Headers.ContentDisposition = ""
	} else if opts.Condition.Kind == store.MatchVersion {
		opts.Headers = store.ContentHeaders{}
	}
	return opts
}

func (b *dropsHeaders) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	return b.Store.Put(ctx, key, data, b.strip(opts))
}

func (b *dropsHeaders) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	return store.PutFrom(ctx, b.Store, key, r, size, b.strip(opts))
}

// HeadlessStreams returns only the headers a GCS reader carries
// (Content-Type, Content-Encoding, Cache-Control) from stream reads, like
// an adapter that fills a reader from the download's attributes alone.
func HeadlessStreams(s store.Store) store.Store { return &headlessStreams{streamer{wrapper{s}}} }

type headlessStreams struct{ streamer }

func (b *headlessStreams) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	r, err := store.NewRangeReader(ctx, b.Store, key, offset, length)
	if err == nil {
		r.Headers.ContentLanguage, r.Headers.ContentDisposition = "", ""
	}
	return r, err
}

// DecompressesGzip reads objects stored with Content-Encoding gzip
// decompressed, as a GCS client does unless told to read them compressed.
func DecompressesGzip(s store.Store) store.Store { return &decompresses{streamer{wrapper{s}}} }

type decompresses struct{ streamer }

func gunzip(data []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return data
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return data
	}
	return out
}

func (b *decompresses) Get(ctx context.Context, key string) (*store.Object, error) {
	o, err := b.Store.Get(ctx, key)
	if err == nil && o.Headers.ContentEncoding == "gzip" {
		o.Data = gunzip(o.Data)
	}
	return o, err
}

func (b *decompresses) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	o, err := b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return store.ReaderOf(o, offset, length)
}
