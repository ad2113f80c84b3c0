package memstore

import (
	"context"

	"github.com/cellb/cellb/core/store"
)

// Copy implements store.Driver: under one lock, dst is created with src's
// body, metadata and content headers, only if dst does not exist.
func (d *driver) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	from, ok := d.objects[src]
	if !ok {
		return "", store.NotFound("copy", src)
	}
	if _, exists := d.objects[dst]; exists {
		return "", store.PreconditionFailed("copy", dst)
	}
	// Stored data is never changed, so the copy shares it.
	o := &object{data: from.data, metadata: cloneMetadata(from.metadata), headers: from.headers}
	d.publish(dst, o)
	return o.version, nil
}
