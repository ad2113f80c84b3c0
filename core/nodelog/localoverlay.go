package nodelog

import (
	"context"
	"strings"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// LocalNodePrefix starts every node id a single host's processes write
// their node logs under (LocalNodeID); fleet node ids start with "node_".
const LocalNodePrefix = "host_"

// localOverlay is Overlay for a cell without an ownership record: the
// rows of the cell that the node logs of single host processes hold, every
// epoch's (a restore lays each epoch's over that epoch's files). A single
// host keeps no record saying which process owns the cell, so every
// session of every single host node in the bucket is read: one listing of
// log/, one per such node, one per session, and two ranged reads per
// bundle. A bucket without single host logs costs the one listing.
func localOverlay(ctx context.Context, s store.Store, cell string) ([]ltx.FileInfo, error) {
	nodes, err := store.ListAll(ctx, s, store.ListOptions{Prefix: layout.NodeLogPrefix, Delimiter: "/"})
	if err != nil {
		return nil, err
	}
	var out []ltx.FileInfo
	covered := coveredOf(ctx, s, cell)
	for _, np := range nodes.Prefixes {
		node := strings.TrimSuffix(strings.TrimPrefix(np, layout.NodeLogPrefix), "/")
		if !strings.HasPrefix(node, LocalNodePrefix) {
			continue
		}
		sessions, err := store.ListAll(ctx, s, store.ListOptions{Prefix: np, Delimiter: "/"})
		if err != nil {
			return nil, err
		}
		for _, sp := range sessions.Prefixes {
			gen := strings.TrimSuffix(strings.TrimPrefix(sp, np), "/")
			rows, err := sessionRows(ctx, s, node, gen, cell, 0, covered)
			if err != nil {
				return nil, err
			}
			out = append(out, rows...)
		}
	}
	return out, nil
}
