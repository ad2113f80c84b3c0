package backup

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// Mode is backups as a durability mode: "backup", kept under
// cells/<cell>/backup/, restorable to the newest backup.
func Mode() durability.Mode {
	return durability.Mode{
		Log: layout.Backup(),
		Open: func(o durability.OpenOptions) (durability.Log, error) {
			return New(Options{Store: o.Store, Clock: o.Clock, Logger: o.Logger})
		},
		Restore: restoreMode,
	}
}

func restoreMode(ctx context.Context, s store.Store, cell string, req durability.RestoreRequest, out durability.RestoreSink) (durability.Restored, error) {
	if req.TXID != 0 || !req.Time.IsZero() {
		return durability.Restored{}, &durability.NoPointInTimeError{Mode: layout.Backup().Name}
	}
	s, progressDone, err := durability.ReadProgress(ctx, s, layout.Backup().Prefix(cell), req.Progress)
	if err != nil {
		return durability.Restored{}, err
	}
	info, err := RestoreTo(ctx, s, cell, out)
	if err != nil {
		return durability.Restored{}, err
	}
	progressDone()
	return durability.Restored{From: fmt.Sprintf("backup %s", info.Key)}, nil
}
