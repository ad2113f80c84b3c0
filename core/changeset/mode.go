package changeset

import (
	"context"
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// Mode is the changeset log as a durability mode: "changeset", kept under
// cells/<cell>/changeset/, restorable to its newest state. Its log needs a
// connection with SQLite sessions, and so does its Restore
// (RestoreRequest.Scratch).
func Mode() durability.Mode {
	return durability.Mode{
		Log:            layout.Changeset(),
		NeedsSessions:  true,
		SyncsLocal:     true,
		AcksFromBucket: true,
		Open: func(o durability.OpenOptions) (durability.Log, error) {
			return New(Options{Store: o.Store, Clock: o.Clock, Logger: o.Logger})
		},
		Restore: restoreMode,
	}
}

func restoreMode(ctx context.Context, s store.Store, cell string, req durability.RestoreRequest, out durability.RestoreSink) (durability.Restored, error) {
	if req.TXID != 0 || !req.Time.IsZero() {
		return durability.Restored{}, &durability.NoPointInTimeError{Mode: layout.Changeset().Name}
	}
	if req.Scratch == nil {
		return durability.Restored{}, errors.New("changeset: restoring needs a scratch database with SQLite sessions (RestoreRequest.Scratch)")
	}
	s, progressDone, err := durability.ReadProgress(ctx, s, layout.Changeset().Prefix(cell), req.Progress)
	if err != nil {
		return durability.Restored{}, err
	}
	conn, err := req.Scratch(ctx)
	if err != nil {
		return durability.Restored{}, err
	}
	res, rerr := Restore(ctx, s, cell, conn)
	if rerr == nil {
		rerr = durability.CopyImage(ctx, conn, out)
	}
	if err := errors.Join(rerr, conn.Close()); err != nil {
		return durability.Restored{}, err
	}
	progressDone()
	return durability.Restored{From: fmt.Sprintf("the changeset log (epoch %d, commit %d, %d files)", res.Epoch, res.Seq, len(res.Files))}, nil
}
