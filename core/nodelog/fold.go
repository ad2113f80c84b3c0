package nodelog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/metrics"
	"github.com/cellb/cellb/core/store"
)

// FoldOptions configure a Fold.
type FoldOptions struct {
	// Concurrency is how many cells are folded at once (default 8).
	Concurrency int
	// Retries of each object written (default 4, 150 ms doubling).
	Retries    int
	RetryDelay time.Duration
	Clock      clock.Clock
	Logger     *slog.Logger
	// Metrics, if set, counts the recovery (core/metrics).
	Metrics *metrics.NodeLog
	// Current reports whether a cell epoch's rows may still be folded:
	// false means the epoch was let go after its acknowledged rows were
	// tiered, so what is left was acknowledged to no one. Nil: while the
	// cell's ownership record names the session's node at that epoch
	// (OwnedByNode, a fleet's rule); a single host, which keeps no
	// records, uses NoLaterEpoch.
	Current func(ctx context.Context, s store.Store, node, cell string, epoch uint64) (bool, error)
}

// FoldResult is what a Fold read and wrote.
type FoldResult struct {
	Bundles int // bundles read
	Rows    int // distinct rows in them
	Cells   int // (cell, epoch) groups the rows belong to
	Skipped int // groups left alone: the cell's record has moved past the session's epoch
	Folded  int // rows written into cells' prefixes
	Objects int // objects written
}

// Folder folds a dead session's node log: core/fleet's recovery calls it
// between fencing the session's record and sealing it.
type Folder interface {
	Fold(ctx context.Context, node, generation string) (FoldResult, error)
}

// StoreFolder is the Folder that folds on a bucket.
type StoreFolder struct {
	Store store.Store
	Opts  FoldOptions
}

// Fold implements Folder.
func (f StoreFolder) Fold(ctx context.Context, node, generation string) (FoldResult, error) {
	return Fold(ctx, f.Store, node, generation, f.Opts)
}

// Fold writes every row of a session's retained bundles that its cell's
// own prefix does not cover yet into that prefix (celld-node-log.md §7.3),
// whatever the bundle's log epoch:
//
//   - rows are grouped by (cell, cell epoch); the first copy of a row
//     wins (a row repeated in a later bundle holds the same bytes);
//   - a group is folded only while the cell's ownership record still names
//     the session's node at that epoch (FoldOptions.Current; on a single
//     host, while the bucket holds no later epoch of the cell). A record that moved on (released,
//     or taken again) means the owner tiered every row it acknowledged
//     before letting the epoch go, and anything left is a row no one was
//     told of (a reset cell's last commit, an uncredited flush): writing
//     it into an epoch another writer may already have continued would
//     change history;
//   - rows at or below the highest TXID the cell's epoch prefix holds (any
//     level) are dropped; the run that follows it without a gap is written
//     as one merged level-0 file <first>-<last> (newest page wins, as
//     celld's compactor merges), a row alone verbatim as <t>-<t>. Rows
//     after a missing one are not written (and are logged): a cell
//     acknowledges a row only once every row before it is credited, so
//     rows past a gap were never acknowledged (an earlier group's credit
//     failed after the later group was stored), and writing them would
//     leave a chain no restore can cross.
//
// Writes are plain PUTs of exact TXID ranges into an epoch no live writer
// uses (the session is fenced before, and no node takes one of its cells
// until it is sealed), so racing recoverers write the same rows. An
// unreadable bundle fails the fold (nothing is sealed over a row that may
// be acknowledged); so does a bundle that vanished between the listing and
// its read (another recoverer finished and the sweep deleted it: the
// caller reads the record again).
func Fold(ctx context.Context, s store.Store, node, generation string, opts FoldOptions) (res FoldResult, err error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.Retries == 0 {
		opts.Retries = 4
	}
	if opts.RetryDelay == 0 {
		opts.RetryDelay = 150 * time.Millisecond
	}
	clk := clock.Or(opts.Clock)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	log := opts.Logger.With("recovering", layout.SessionLeader(node, generation))
	began := clk.Now()
	defer func() { opts.Metrics.Recovery(clk.Now().Sub(began), res.Folded, err) }()

	bundles, err := ListBundles(ctx, s, node, generation)
	if err != nil {
		return res, err
	}
	groups := map[cellEpoch]map[ltx.TXID][]byte{}
	for _, b := range bundles {
		data, rows, err := readBundleRetrying(ctx, s, b.Key, clk)
		if err != nil {
			return res, fmt.Errorf("recover %s: read %s: %w", layout.SessionLeader(node, generation), b.Key, err)
		}
		res.Bundles++
		for _, r := range rows {
			k := cellEpoch{r.Cell, r.CellEpoch}
			g := groups[k]
			if g == nil {
				g = map[ltx.TXID][]byte{}
				groups[k] = g
			}
			if _, seen := g[r.TXID]; !seen {
				g[r.TXID] = r.Payload(data)
				res.Rows++
			}
		}
	}
	res.Cells = len(groups)
	keys := make([]cellEpoch, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].cell != keys[j].cell {
			return keys[i].cell < keys[j].cell
		}
		return keys[i].epoch < keys[j].epoch
	})
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, opts.Concurrency)
	)
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			folded, objects, skipped, err := foldCell(ctx, s, node, k, groups[k], opts, log)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("fold %s epoch %d: %w", k.cell, k.epoch, err))
			}
			res.Folded += folded
			res.Objects += objects
			if skipped {
				res.Skipped++
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	log.Info("node log folded into the cells' prefixes", "bundles", res.Bundles, "rows", res.Rows, "cells", res.Cells,
		"folded", res.Folded, "objects", res.Objects, "skipped", res.Skipped)
	return res, nil
}

// foldCell folds one cell epoch's rows (see Fold).
func foldCell(ctx context.Context, s store.Store, node string, k cellEpoch, rows map[ltx.TXID][]byte, opts FoldOptions, log *slog.Logger) (folded, objects int, skipped bool, err error) {
	current := opts.Current
	if current == nil {
		current = OwnedByNode
	}
	if ok, err := current(ctx, s, node, k.cell, k.epoch); err != nil || !ok {
		return 0, 0, err == nil, err
	}
	covered, err := Covered(ctx, s, k.cell, k.epoch)
	if err != nil {
		return 0, 0, false, err
	}
	var txids []ltx.TXID
	for t := range rows {
		if t > covered {
			txids = append(txids, t)
		}
	}
	slices.Sort(txids)
	// The run right after the prefix, without a gap.
	n := 0
	for n < len(txids) && txids[n] == covered+1+ltx.TXID(n) {
		n++
	}
	if n < len(txids) {
		log.Error("bundled rows after a missing one are not folded: they were never acknowledged",
			"cell", k.cell, "epoch", k.epoch, "covered", covered+ltx.TXID(n), "missing", covered+ltx.TXID(n)+1, "dropped", len(txids)-n)
		txids = txids[:n]
	}
	if len(txids) > 0 {
		run := txids
		var data []byte
		var h ltx.Header
		if len(run) == 1 {
			data = rows[run[0]]
			if h, err = ltx.DecodeHeader(data); err != nil {
				return folded, objects, false, fmt.Errorf("row TXID %d: %w", run[0], err)
			}
		} else {
			files := make([][]byte, len(run))
			for n, t := range run {
				files[n] = rows[t]
			}
			if data, h, err = ltx.MergeFiles(files); err != nil {
				return folded, objects, false, fmt.Errorf("merge TXIDs %d-%d: %w", run[0], run[len(run)-1], err)
			}
		}
		if h.MinTXID != run[0] || h.MaxTXID != run[len(run)-1] {
			return folded, objects, false, &ltx.CorruptError{Reason: fmt.Sprintf("bundle row for TXID %d holds TXIDs %d-%d", run[0], h.MinTXID, h.MaxTXID)}
		}
		key := ltx.Key(k.cell, k.epoch, 0, run[0], run[len(run)-1])
		md := map[string]string{ltx.MetadataTimestamp: ltx.FormatTimestamp(h.Timestamp)}
		retry := store.Retry{Retries: opts.Retries, Delay: opts.RetryDelay, Clock: opts.Clock, Logger: log}
		if err := store.PutRetrying(s, key, data, store.PutOptions{Metadata: md}, retry); err != nil {
			return folded, objects, false, err
		}
		folded += len(run)
		objects++
	}
	return folded, objects, false, nil
}

// OwnedByNode is Fold's fleet rule: the cell's ownership record still
// names node at epoch.
func OwnedByNode(ctx context.Context, s store.Store, node, cell string, epoch uint64) (bool, error) {
	ownKey := layout.OwnKey(cell)
	obj, err := store.GetData(ctx, s, ownKey)
	switch {
	case store.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	rec, err := layout.DecodeOwnRecord(ownKey, obj.Data)
	if err != nil {
		return false, err
	}
	return rec.Node == node && rec.Epoch == epoch, nil
}

// Covered is the highest TXID the cell's epoch prefix holds, at any level
// (0 when it holds none).
func Covered(ctx context.Context, s store.Store, cell string, epoch uint64) (ltx.TXID, error) {
	var top ltx.TXID
	prefix := ltx.EpochPrefix(cell, epoch)
	err := store.ListEach(ctx, s, store.ListOptions{Prefix: prefix}, func(p store.ListPage) error {
		for _, o := range p.Objects {
			if f, ok := ltx.ParseKey(o.Key); ok && f.Cell == cell && f.Epoch == epoch {
				top = max(top, f.MaxTXID)
			}
		}
		return nil
	})
	return top, err
}
