package brokenstore

import (
	"context"

	"github.com/cellb/cellb/core/store"
)

// CopyOverwrites has a Copier that replaces an existing destination, like
// an adapter that sends CopyObject without If-None-Match: a fork onto a
// cell that was written meanwhile would destroy its log.
func CopyOverwrites(s store.Store) store.Store { return &copyOverwrites{streamer{wrapper{s}}} }

type copyOverwrites struct{ streamer }

// Copy implements store.Copier, wrongly.
func (b *copyOverwrites) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	o, err := b.Store.Get(ctx, src)
	if err != nil {
		return "", err
	}
	return b.Store.Put(ctx, dst, o.Data, store.PutOptions{Metadata: o.Metadata, Headers: o.Headers})
}

// CopyDropsMetadata has a Copier that copies the body only, like a copy
// request that sets its own (empty) metadata and headers instead of the
// source's: LTX files would lose their litestream-timestamp.
func CopyDropsMetadata(s store.Store) store.Store { return &copyDropsMetadata{streamer{wrapper{s}}} }

type copyDropsMetadata struct{ streamer }

// Copy implements store.Copier, wrongly.
func (b *copyDropsMetadata) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	o, err := b.Store.Get(ctx, src)
	if err != nil {
		return "", err
	}
	return b.Store.Put(ctx, dst, o.Data, store.PutOptions{Condition: store.IfAbsent})
}
