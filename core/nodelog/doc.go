// Package nodelog is the node log (docs/durability.md, "The node log"):
// the commits of every cell a fleet node owns go into one bucket object per
// flush, a bundle in celld's CLB1 layout at
// log/<node>/<generation>/bundle/e<logepoch>-<seq:08>.ltxb, instead of one
// object per commit per cell.
//
// Writing: a cell's log (core/ltxlog with a node log) hands each batch of
// its level-0 files, one file per TXID, to Submit. A flush starts as soon
// as rows are queued and no bundle PUT is in flight, so a lone commit is
// never held for a timer and a busy node's flush rate is bounded by its PUT
// round trip; past MaxBundleBytes queued, a few more PUTs may run at once.
//
// Acknowledging: a row is credited (Submit returns nil) once its bundle is
// stored and a read of the node's record (nodes/<node>.json), started after
// the PUT returned, still shows this session's log open at its epoch
// (celld's rule, through the Confirmer port the fleet node implements).
// Any node that takes one of this node's cells while this node is thought
// dead must first fence that record (open to recovering) and then fold
// every bundle it lists; a read that still shows the record open happened
// before that fence, so the bundle the read followed is listed and folded.
// A node that releases a cell first tiers its rows. So the one read per
// flush stands in for every cell's re-read of its ownership record: reads
// per flush are bounded (at most one in flight and one queued, shared by
// every flush and every snapshot waiting), not per cell.
//
// Tiering: a cell's credited rows reach its own prefix
// (cells/<cell>/ltx/e<epoch>/0000/<a>-<b>.ltx, merged) in the background
// and always before the cell is released; a bundle is deleted once every
// row in it is covered (Covered), in batches off the acknowledgement path
// (gc.go).
//
// Recovery (Fold): a node that takes a cell from a dead node, or the same
// node id restarting, folds the dead session's retained bundles into the
// per-cell prefixes before the session's record is sealed (core/fleet runs
// the record's side of it). Restores of a live owner's cell read its
// untiered rows through Overlay.
package nodelog
