package fleet

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"time"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// probeBucket runs celld's start-up probe (store.Prober) on the bucket a
// node is about to join, before the node writes anything: a bucket that
// ignores create-only or compare-and-swap conditions would let two nodes
// own one cell at one epoch. A failure is the probe's *store.ProbeError,
// unchanged, so its message is the probe's own; the probe deletes its key
// even then when it can.
func probeBucket(ctx context.Context, opts Options) error {
	if opts.Store == nil {
		return nil // join reports it
	}
	p := store.Prober{Clock: opts.Clock}
	if opts.Node != "" && store.ValidateKey(layout.NodeKey(opts.Node)) == nil {
		p.Tag = opts.Node
	}
	if opts.Rand != nil {
		p.Random = func() uint64 {
			var b [8]byte
			_, _ = io.ReadFull(opts.Rand, b[:])
			return binary.LittleEndian.Uint64(b[:])
		}
	}
	res, err := p.Run(ctx, opts.Store)
	if err != nil {
		return err
	}
	var took time.Duration
	for _, s := range res.Steps {
		took += s.Elapsed
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Debug("bucket probe passed", "node", opts.Node, "key", res.Key, "requests", store.ProbeRequests, "took", took)
	return nil
}
