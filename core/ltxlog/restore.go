package ltxlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
)

// ErrNothingToRestore: the bucket holds no LTX for the cell.
var ErrNothingToRestore = errors.New("the bucket holds no LTX files for this cell")

// RestoreOptions select what to restore.
type RestoreOptions struct {
	// TXID restores exactly this transaction of the newest chain (0: the
	// newest). A TXID inside a merged file fails with
	// *ltx.TXIDNotRestorableError naming the nearest one below.
	TXID ltx.TXID
	// Epoch, with TXID, restores the state a bookmark names
	// (durability.Bookmark): TXID of this epoch's chain, which need not be
	// the newest (0: the newest chain). A bookmark whose epoch the bucket
	// no longer holds as a chain fails with *EpochNotRestorableError.
	Epoch uint64
	// Time restores the newest state whose file timestamp is at or before
	// it (zero: the newest). Compacted files carry their newest
	// transaction's time, so older points inside them are not reachable.
	Time time.Time
	// Progress, if set, is called after each file is read with the bytes
	// read so far and the bytes the plan holds.
	Progress func(done, total int64)
	// Overlay, if set, lists files to lay over the cell's prefix, read
	// afresh for every attempt: the rows of the cell's owner's node log
	// not yet tiered (nodelog.Overlay; RestoreTo and the mode's restore
	// use it by default, see WithOverlay).
	Overlay func(ctx context.Context) ([]ltx.FileInfo, error)

	// listed, when haveListed, are the cell's epochs as the caller just
	// listed them (newest first), used by the first attempt instead of a
	// listing of its own (restorenext.go).
	listed     []uint64
	haveListed bool
}

// WithOverlay returns opts reading the cell owner's node log too
// (nodelog.Overlay), unless opts already has an Overlay.
func WithOverlay(s store.Store, cell string, opts RestoreOptions) RestoreOptions {
	if opts.Overlay == nil {
		opts.Overlay = func(ctx context.Context) ([]ltx.FileInfo, error) { return nodelog.Overlay(ctx, s, cell) }
	}
	return opts
}

// Result is a restored image and where it came from.
type Result struct {
	Image []byte
	TXID  ltx.TXID
	Epoch uint64 // the epoch of the last file applied
	Files []ltx.FileInfo
}

// Restore rebuilds a cell's newest (or chosen) image from the bucket alone.
// It only reads. Every file is fully verified; a gap, a corrupt file or a
// chain that does not start at TXID 1 is an error, never a partial image.
//
// A file that vanishes between the listing and the read (a compaction by
// the cell's owner replaced it) restarts the restore from a fresh listing.
func Restore(ctx context.Context, s store.Store, cell string, opts RestoreOptions) (*Result, error) {
	return restoreFor(ctx, s, cell, opts, 0)
}

// RestoreTo is Restore writing the image to sink (an empty file, say)
// instead of memory: pages go to their offsets as files are decoded, so a
// large cell needs no image-sized buffer. Result.Image is nil. On error
// the sink holds garbage.
func RestoreTo(ctx context.Context, s store.Store, cell string, opts RestoreOptions, sink ltx.Sink) (*Result, error) {
	for attempt := 1; ; attempt++ {
		if err := sink.Truncate(0); err != nil {
			return nil, err
		}
		res, err := restoreOnce(ctx, s, cell, opts, sink, 0)
		if err != nil && store.IsNotFound(err) && attempt < 5 {
			continue
		}
		return res, err
	}
}

// restoreFor is Restore for a writer about to start epoch writer (0: no
// writer): it also refuses when the log already holds that epoch or a
// newer one.
func restoreFor(ctx context.Context, s store.Store, cell string, opts RestoreOptions, writer uint64) (*Result, error) {
	for attempt := 1; ; attempt++ {
		res, err := restoreOnce(ctx, s, cell, opts, nil, writer)
		if err != nil && store.IsNotFound(err) && attempt < 5 {
			opts.listed, opts.haveListed = nil, false
			continue
		}
		return res, err
	}
}

// restoreForTo is restoreFor writing the image to sink.
func restoreForTo(ctx context.Context, s store.Store, cell string, opts RestoreOptions, writer uint64, sink ltx.Sink) (*Result, error) {
	for attempt := 1; ; attempt++ {
		if err := sink.Truncate(0); err != nil {
			return nil, err
		}
		res, err := restoreOnce(ctx, s, cell, opts, sink, writer)
		if err != nil && store.IsNotFound(err) && attempt < 5 {
			opts.listed, opts.haveListed = nil, false
			continue
		}
		return res, err
	}
}

func restoreOnce(ctx context.Context, s store.Store, cell string, opts RestoreOptions, sink ltx.Sink, writer uint64) (*Result, error) {
	var overlay []ltx.FileInfo
	if opts.Overlay != nil {
		var err error
		if overlay, err = opts.Overlay(ctx); err != nil {
			return nil, fmt.Errorf("read the node log of %s's owner: %w", cell, err)
		}
	}
	if !opts.Time.IsZero() && opts.TXID == 0 && opts.Epoch == 0 {
		// States older than the newest chain's files (a retention
		// window keeps them) are found as BookmarkForTime finds them, then
		// restored exactly; an error leaves the search along the newest
		// chain below to say why.
		if b, err := bookmarkForTimeIn(ctx, s, cell, opts.Time, overlay); err == nil {
			opts.Epoch, opts.TXID, opts.Time = b.Epoch, ltx.TXID(b.TXID), time.Time{}
		}
	}
	var listed []uint64
	if opts.haveListed {
		listed = append([]uint64{}, opts.listed...)
	}
	chain, err := findChainListed(ctx, s, cell, writer, opts.Epoch, overlay, listed, opts.haveListed)
	if err != nil {
		return nil, err
	}
	plan, err := ltx.PlanTo(chain, opts.TXID)
	if err != nil {
		return nil, err
	}
	if opts.Epoch != 0 && plan[len(plan)-1].Epoch != opts.Epoch {
		// The walk found no chain of the bookmark's epoch and fell to an
		// older one, whose same TXID is another state.
		return nil, &EpochNotRestorableError{Cell: cell, Epoch: opts.Epoch}
	}
	var total, done int64
	for _, f := range plan {
		total += f.Size
	}
	im := ltx.NewImage()
	if sink != nil {
		co := newCoalescer(sink)
		defer co.close()
		// Finish's final Truncate writes the last batch.
		im = ltx.NewImageTo(co)
	}
	res := &Result{}
	// Progress starts at 0 and advances as each file's bytes arrive, not
	// only when a file ends: the first file is the snapshot, most of the
	// bytes.
	var read func(n int64)
	if opts.Progress != nil {
		opts.Progress(0, total)
		read = func(n int64) { opts.Progress(done+n, total) }
	}
	for _, f := range plan {
		stop, n, err := applyStreamed(ctx, s, im, f, opts.Time, cell, read)
		if err != nil {
			return nil, err
		}
		if stop {
			break
		}
		res.Files = append(res.Files, f)
		res.Epoch = f.Epoch
		done += n
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	res.TXID = im.TXID()
	if sink != nil {
		return res, im.Finish()
	}
	img, err := im.Bytes()
	if err != nil {
		return nil, err
	}
	res.Image = img
	return res, nil
}

// applyStreamed downloads f and lays it over im as it arrives: its header
// first (checked against its name, and against the time limit: stop when
// the file is newer than it), then its pages one by one, so no file-sized
// buffer is held. n is the file's size.
func applyStreamed(ctx context.Context, s store.Store, im *ltx.Image, f ltx.FileInfo, limit time.Time, cell string, read func(n int64)) (stop bool, n int64, err error) {
	var sr *store.Reader
	if f.InBundle {
		sr, err = store.NewRangeReader(ctx, s, f.Key, f.Offset, f.Size)
		if errors.Is(err, store.ErrInvalidRange) {
			err = fmt.Errorf("%w: the bundle changed since it was listed", store.ErrNotFound)
		}
	} else {
		sr, err = store.NewReader(ctx, s, f.Key)
	}
	if err != nil {
		return false, 0, fmt.Errorf("read %s: %w", f.Key, err)
	}
	defer sr.Close()
	r := io.Reader(sr)
	if read != nil {
		r = &countingReader{r: sr, report: read}
	}
	hb := make([]byte, ltx.HeaderSize)
	if _, err := io.ReadFull(r, hb); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return false, 0, &ltx.CorruptError{Key: f.Key, Reason: fmt.Sprintf("only %d bytes, shorter than a header", sr.Size)}
		}
		return false, 0, fmt.Errorf("read %s: %w", f.Key, err)
	}
	h, err := ltx.DecodeHeader(hb)
	if err != nil {
		return false, 0, withKey(err, f.Key)
	}
	if h.MinTXID != f.MinTXID || h.MaxTXID != f.MaxTXID {
		return false, 0, &ltx.CorruptError{Key: f.Key, Reason: fmt.Sprintf("header holds TXIDs %d-%d, name says %d-%d",
			h.MinTXID, h.MaxTXID, f.MinTXID, f.MaxTXID)}
	}
	if !limit.IsZero() && h.Timestamp > limit.UnixMilli() {
		if im.TXID() == 0 {
			return false, 0, fmt.Errorf("no state of %s at or before %s: its chain starts at %s",
				cell, limit.UTC().Format(time.RFC3339Nano), ltx.FormatTimestamp(h.Timestamp))
		}
		return true, 0, nil
	}
	if _, err := im.ApplyFrom(io.MultiReader(bytes.NewReader(hb), r)); err != nil {
		return false, 0, fmt.Errorf("apply %s: %w", f.Key, withKey(err, f.Key))
	}
	return false, sr.Size, nil
}

// countingReader reports the bytes read so far, at most once per
// progressStep, so a progress bar advances within a large file.
type countingReader struct {
	r       io.Reader
	n, last int64
	report  func(n int64)
}

const progressStep = 256 << 10

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	if c.n-c.last >= progressStep {
		c.last = c.n
		c.report(c.n)
	}
	return k, err
}

// findChain lists the cell's epochs from newest to oldest and stops as soon
// as they hold a chain that starts at TXID 1, so an old cell with many
// epochs costs one listing per epoch it actually needs. With a writer
// epoch, a newest epoch at or above it is refused (*durability.EpochInUseError).
//
// overlay files (bundle rows) join their epoch's listing.
func findChain(ctx context.Context, s store.Store, cell string, writer uint64, overlay []ltx.FileInfo) ([]ltx.FileInfo, error) {
	return findChainUpTo(ctx, s, cell, writer, 0, overlay)
}

// findChainUpTo is findChain ignoring the epochs above upTo (0: none
// ignored), after the writer's check (which looks at every epoch).
func findChainUpTo(ctx context.Context, s store.Store, cell string, writer, upTo uint64, overlay []ltx.FileInfo) ([]ltx.FileInfo, error) {
	return findChainListed(ctx, s, cell, writer, upTo, overlay, nil, false)
}

// findChainListed is findChainUpTo on the epochs the caller listed, when
// haveListed (else it lists them).
func findChainListed(ctx context.Context, s store.Store, cell string, writer, upTo uint64, overlay []ltx.FileInfo, epochs []uint64, haveListed bool) ([]ltx.FileInfo, error) {
	if !haveListed {
		var err error
		if epochs, err = listEpochs(ctx, s, cell); err != nil {
			return nil, err
		}
	}
	if len(epochs) == 0 {
		return nil, ErrNothingToRestore
	}
	if writer > 0 && epochs[0] >= writer {
		page, err := s.List(ctx, store.ListOptions{Prefix: ltx.EpochPrefix(cell, epochs[0]), Limit: 1})
		if err != nil {
			return nil, err
		}
		key := ltx.EpochPrefix(cell, epochs[0])
		if len(page.Objects) > 0 {
			key = page.Objects[0].Key
		}
		return nil, &durability.EpochInUseError{Cell: cell, Epoch: writer, Key: key, Newest: epochs[0]}
	}
	if upTo != 0 {
		kept := epochs[:0:0]
		for _, e := range epochs {
			if e <= upTo {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 || kept[0] != upTo {
			return nil, &EpochNotRestorableError{Cell: cell, Epoch: upTo}
		}
		epochs = kept
	}
	var files []ltx.FileInfo
	var lastErr error
	for _, e := range epochs {
		fs, err := listEpochFiles(ctx, s, cell, e)
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
		for _, f := range overlay {
			if f.Epoch == e {
				files = append(files, f)
			}
		}
		chain, err := ltx.PlanEpochs(files)
		if err == nil {
			return chain, nil
		}
		// An epoch that lost its snapshot stays refused whatever is below
		// it; list one older epoch only to name it in the error.
		var me *ltx.MissingSnapshotError
		if errors.As(err, &me) && me.Older != 0 {
			return nil, err
		}
		lastErr = err
	}
	if errors.Is(lastErr, ltx.ErrTxNotAvailable) {
		return nil, ErrNothingToRestore
	}
	return nil, lastErr
}

// listEpochs returns the cell's epochs, newest first.
func listEpochs(ctx context.Context, s store.Store, cell string) ([]uint64, error) {
	l, err := listCellLTX(ctx, s, cell)
	return l.epochs, err
}

func listEpochFiles(ctx context.Context, s store.Store, cell string, epoch uint64) ([]ltx.FileInfo, error) {
	page, err := store.ListAll(ctx, s, store.ListOptions{Prefix: ltx.EpochPrefix(cell, epoch)})
	if err != nil {
		return nil, err
	}
	var out []ltx.FileInfo
	for _, o := range page.Objects {
		f, ok := ltx.ParseKey(o.Key)
		if !ok || f.Cell != cell || f.Epoch != epoch {
			continue
		}
		f.Size, f.Modified = o.Size, o.Modified
		out = append(out, f)
	}
	return out, nil
}

// EpochNotRestorableError: a restore to a bookmark whose epoch the
// bucket holds no chain of (its files moved aside or never written).
type EpochNotRestorableError struct {
	Cell  string
	Epoch uint64
}

func (e *EpochNotRestorableError) Error() string {
	return fmt.Sprintf("no chain of epoch %d of %s to restore (the bucket holds no restorable files of %s)",
		e.Epoch, e.Cell, ltx.EpochPrefix(e.Cell, e.Epoch))
}

// withKey names the object in a corruption error.
func withKey(err error, key string) error {
	var ce *ltx.CorruptError
	if errors.As(err, &ce) && ce.Key == "" {
		ce.Key = key
	}
	return err
}
