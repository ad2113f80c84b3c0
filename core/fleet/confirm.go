package fleet

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// ConfirmLog is celld's credit check for a node log's flush
// (celld-node-log.md §4.3): a read of this node's record that must still
// carry this session's generation with its log open at the log epoch it
// published. A record that says anything else (a recoverer fenced or
// sealed the log, another session replaced the record) fences this node
// for good and returns its *FencedError: the bundle just stored may not be
// counted, and no later one will be. A read that fails returns its error
// and fences nothing. core/nodelog calls it (the node implements its
// Confirmer port); a node without Options.NodeLog refuses.
//
// It runs after every flush, so it decodes a record only when its bytes
// differ from the last one it found current (confirmedRecord): between two
// renewals every read returns the same bytes, which mean the same.
func (n *Node) ConfirmLog(ctx context.Context) error {
	n.mu.Lock()
	if n.fenced != nil {
		err := n.fenced
		n.mu.Unlock()
		return err
	}
	want := n.nodeLog
	n.mu.Unlock()
	if want == nil {
		return fmt.Errorf("fleet: node %s publishes no node log", n.opts.Node)
	}
	key := layout.NodeKey(n.opts.Node)
	obj, err := store.GetData(ctx, n.opts.Store, key)
	if err != nil && !store.IsNotFound(err) {
		return fmt.Errorf("read %s to confirm the node log: %w", key, err)
	}
	if err == nil {
		if n.confirmed.same(obj.Data, want.Epoch) {
			return nil
		}
		lease, err := layout.DecodeNodeLease(key, obj.Data)
		if err != nil {
			return fmt.Errorf("read %s to confirm the node log: %w", key, err)
		}
		if lease.OwnershipIndexGeneration == n.pubkey && lease.Log != nil &&
			lease.Log.State == layout.NodeLogOpen && lease.Log.Epoch == want.Epoch {
			n.confirmed.set(obj.Data, want.Epoch)
			return nil
		}
	}
	n.fence(FenceLogClosed)
	return n.FenceErr()
}

// confirmedRecord is the last node record ConfirmLog found current, byte
// for byte, and the log epoch it was current at. The decision is a
// function of the bytes alone (the generation and the epoch it is checked
// against are the session's), so the same bytes read again are current
// again; any change (a renewal, a recoverer's fence) is decoded afresh.
type confirmedRecord struct {
	mu    sync.Mutex
	data  []byte
	epoch uint64
	ok    bool
}

func (c *confirmedRecord) same(data []byte, epoch uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ok && c.epoch == epoch && bytes.Equal(c.data, data)
}

func (c *confirmedRecord) set(data []byte, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.data = append(c.data[:0], data...) // the buffer is reused from one record to the next
	c.epoch, c.ok = epoch, true
}

// Fence self-fences the node for good with reason (see FencedError): the
// node log calls it when it cannot keep its promises (a cell's rows could
// not be tiered before the cell's release), so that the node's record
// expires with its log open and the next node to take its cells recovers
// the log first.
func (n *Node) Fence(reason string) { n.fence(reason) }
