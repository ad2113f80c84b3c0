package fleet

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/layout"
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
	lease, _, err := ReadNodeLease(ctx, n.opts.Store, n.opts.Node)
	if err != nil {
		return fmt.Errorf("read %s to confirm the node log: %w", layout.NodeKey(n.opts.Node), err)
	}
	if lease != nil && lease.OwnershipIndexGeneration == n.pubkey && lease.Log != nil &&
		lease.Log.State == layout.NodeLogOpen && lease.Log.Epoch == want.Epoch {
		return nil
	}
	n.fence(FenceLogClosed)
	return n.FenceErr()
}

// Fence self-fences the node for good with reason (see FencedError): the
// node log calls it when it cannot keep its promises (a cell's rows could
// not be tiered before the cell's release), so that the node's record
// expires with its log open and the next node to take its cells recovers
// the log first.
func (n *Node) Fence(reason string) { n.fence(reason) }
