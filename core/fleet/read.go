package fleet

import (
	"context"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// ReadOwn reads a cell's ownership record (layout.OwnKey) with its
// version: nil and "" when there is none, a *layout.RecordError when it
// does not decode.
func ReadOwn(ctx context.Context, s store.Store, cell string) (*layout.OwnRecord, store.Version, error) {
	key := layout.OwnKey(cell)
	obj, err := store.GetData(ctx, s, key)
	if store.IsNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	rec, err := layout.DecodeOwnRecord(key, obj.Data)
	if err != nil {
		return nil, "", err
	}
	return &rec, obj.Version, nil
}

// ReadNodeLease reads a node's lease (layout.NodeKey) with its version:
// nil and "" when there is none, a *layout.RecordError when it does not
// decode.
func ReadNodeLease(ctx context.Context, s store.Store, node string) (*layout.NodeLease, store.Version, error) {
	key := layout.NodeKey(node)
	obj, err := store.GetData(ctx, s, key)
	if store.IsNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	l, err := layout.DecodeNodeLease(key, obj.Data)
	if err != nil {
		return nil, "", err
	}
	return &l, obj.Version, nil
}
