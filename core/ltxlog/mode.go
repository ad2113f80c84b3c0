package ltxlog

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
)

// Mode is the LTX log as a durability mode: "ltx", kept under
// cells/<cell>/ltx/, restorable to any TXID or time.
func Mode() durability.Mode {
	return durability.Mode{
		Log:            layout.LTX(),
		PointInTime:    true,
		SyncsLocal:     true,
		AcksFromBucket: true,
		Open: func(o durability.OpenOptions) (durability.Log, error) {
			return New(Options{Store: o.Store, Clock: o.Clock, Logger: o.Logger, Retention: o.Retention})
		},
		Restore: restoreMode,
	}
}

// IsMode reports whether m is the LTX mode (Mode or NodeLogMode).
func IsMode(m durability.Mode) bool { return m.Open != nil && m.Name == layout.LTX().Name }

// NodeLogMode is Mode with every cell's commits after its epoch's
// snapshot carried by nl, the node's node log (Options.NodeLog).
func NodeLogMode(nl *nodelog.Log) durability.Mode {
	m := Mode()
	m.Open = func(o durability.OpenOptions) (durability.Log, error) {
		return New(Options{Store: o.Store, Clock: o.Clock, Logger: o.Logger, NodeLog: nl, Retention: o.Retention})
	}
	return m
}

// restoreMode restores straight into out: pages land at their offsets as
// they are decoded, so no image-sized buffer is needed.
func restoreMode(ctx context.Context, s store.Store, cell string, req durability.RestoreRequest, out durability.RestoreSink) (durability.Restored, error) {
	opts := WithOverlay(s, cell, RestoreOptions{TXID: ltx.TXID(req.TXID), Epoch: req.Epoch, Time: req.Time, Progress: req.Progress})
	res, err := RestoreTo(ctx, s, cell, opts, out)
	if err != nil {
		return durability.Restored{}, err
	}
	return durability.Restored{From: fmt.Sprintf("the LTX log at TXID %d (epoch %d, %d files)", res.TXID, res.Epoch, len(res.Files))}, nil
}
