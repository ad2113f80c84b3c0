package fleet

import (
	"context"
	"strings"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// foundLog is the newest epoch any log of a cell holds.
type foundLog struct {
	Epoch uint64 // 0: no log holds an epoch written under ownership
	Key   string // one object of that epoch, for the lost-record message
	What  string // which log (layout.Log.What)
}

// newestLog lists every log of cell (layout.Logs: the LTX log, the
// changeset log and backups; a lost ownership record is recognised by
// whichever of them holds the cell's data) and returns its newest epoch
// and one key in it. Epoch 0 (written without ownership, by lease.None) does not
// count: such a cell never had a record to lose. On equal epochs the LTX
// log, then the changeset log, is named.
func newestLog(ctx context.Context, s store.Store, cell string) (foundLog, error) {
	var best foundLog
	var bestPrefix string
	for _, l := range layout.Logs() {
		prefix := l.Prefix(cell)
		page, err := store.ListAll(ctx, s, store.ListOptions{Prefix: prefix, Delimiter: "/"})
		if err != nil {
			return foundLog{}, err
		}
		for _, p := range page.Prefixes {
			if e, ok := layout.ParseEpochDir(strings.TrimPrefix(p, prefix)); ok && e > best.Epoch {
				best, bestPrefix = foundLog{Epoch: e, What: l.What}, p
			}
		}
	}
	if best.Epoch == 0 {
		return foundLog{}, nil
	}
	best.Key = bestPrefix
	files, err := s.List(ctx, store.ListOptions{Prefix: bestPrefix, Limit: 1})
	if err != nil {
		return foundLog{}, err
	}
	if len(files.Objects) > 0 {
		best.Key = files.Objects[0].Key
	}
	return best, nil
}
