package changeset

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/internal/imagespool"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// ErrNothingToRestore: the bucket holds no snapshot of the cell.
var ErrNothingToRestore = errors.New("the bucket holds no changeset snapshot for this cell")

// GapError: the files after the snapshot do not follow each other.
type GapError struct {
	Epoch      uint64
	After      uint64 // the last sequence number the chain reaches
	NextMinSeq uint64 // where the next file starts
}

func (e *GapError) Error() string {
	return fmt.Sprintf("changeset log of epoch %d has a gap: commits %d-%d are missing", e.Epoch, e.After+1, e.NextMinSeq-1)
}

// MissingSnapshotError: the newest epoch holding changeset files has no
// snapshot left (every epoch starts with one, so it was lost). Its
// changesets apply only on top of it, and falling back to an older epoch
// would silently drop every commit the epoch acknowledged, so the restore
// (and a node taking the cell) refuses.
type MissingSnapshotError struct {
	Cell  string
	Epoch uint64
	First string // the key of the epoch's lowest file still present
	Older uint64 // the newest older epoch holding files (0: none)
}

func (e *MissingSnapshotError) Error() string {
	msg := fmt.Sprintf("changeset log epoch %d of %s has lost its snapshot: no %s file is left in %s (the epoch's lowest file is %s), "+
		"and its changesets apply only on top of it. Put the missing file back from a copy of the bucket",
		e.Epoch, e.Cell, layout.ChangesetSnapshotSuffix, EpochPrefix(e.Cell, e.Epoch), e.First)
	if e.Older != 0 {
		msg += fmt.Sprintf(", or, to give up every commit of epoch %d and restore epoch %d instead, move %s aside",
			e.Epoch, e.Older, EpochPrefix(e.Cell, e.Epoch))
	}
	return msg
}

// Result describes a restore.
type Result struct {
	Epoch uint64
	Seq   uint64 // the last commit restored
	Files []FileInfo
}

// Restore replaces conn's database with the cell's newest state in the
// bucket: the newest epoch's newest snapshot, then the changesets after it
// in order. Every file is read and verified before the database is touched;
// if applying a changeset then fails, the database holds a partial state and
// the error says so — the caller must not use it. conn must implement
// driver.Sessioner.
//
// A connection that restores from a file it provides
// (driver.ImageRestorer) gets the snapshot's image written into that file
// as it downloads, and the changesets after it wait in a temporary file,
// so no image is held in memory; the changesets are applied one at a time
// once the image is installed. Others get the files read whole.
func Restore(ctx context.Context, s store.Store, cell string, conn driver.Conn) (*Result, error) {
	sc, ok := conn.(driver.Sessioner)
	if !ok {
		return nil, &NoSessionsError{Conn: fmt.Sprintf("%T", conn)}
	}
	if ir, ok := conn.(driver.ImageRestorer); ok {
		res, err := restoreStreamed(ctx, s, cell, ir, sc)
		if !errors.Is(err, errNotStreamed) {
			return res, err
		}
	}
	var files []*File
	var res *Result
	for attempt := 1; ; attempt++ {
		var err error
		files, res, err = read(ctx, s, cell)
		if err != nil && store.IsNotFound(err) && attempt < 5 {
			continue // the owner replaced files with a newer snapshot
		}
		if err != nil {
			return nil, err
		}
		break
	}
	if err := conn.Restore(ctx, files[0].Records[0].Data); err != nil {
		return nil, fmt.Errorf("restore the snapshot %s: %w", res.Files[0].Key, err)
	}
	for i, f := range files {
		for _, r := range f.Records {
			if r.Kind != KindChangeset {
				continue
			}
			if err := sc.ApplyChangeset(ctx, r.Data); err != nil {
				return nil, fmt.Errorf("apply commit %d from %s (the database is only partly restored): %w", r.Seq, res.Files[i].Key, err)
			}
		}
	}
	return res, nil
}

// plan finds the files to restore: the newest epoch's newest snapshot and
// the files after it.
func plan(ctx context.Context, s store.Store, cell string) (*Result, error) {
	epochs, err := listEpochs(ctx, s, cell)
	if err != nil {
		return nil, err
	}
	for i, e := range epochs {
		plan, err := planEpoch(ctx, s, cell, e)
		if err != nil {
			var me *MissingSnapshotError
			if errors.As(err, &me) && i+1 < len(epochs) {
				me.Older = epochs[i+1]
			}
			return nil, err
		}
		if plan == nil {
			continue // no files of the log in this epoch
		}
		return &Result{Epoch: e, Files: plan, Seq: plan[len(plan)-1].MaxSeq}, nil
	}
	return nil, ErrNothingToRestore
}

// read finds and decodes the files to restore.
func read(ctx context.Context, s store.Store, cell string) ([]*File, *Result, error) {
	res, err := plan(ctx, s, cell)
	if err != nil {
		return nil, nil, err
	}
	{
		plan := res.Files
		files := make([]*File, 0, len(plan))
		for _, fi := range plan {
			obj, err := s.Get(ctx, fi.Key)
			if err != nil {
				return nil, nil, fmt.Errorf("read %s: %w", fi.Key, err)
			}
			f, err := Decode(obj.Data)
			if err != nil {
				var ce *CorruptError
				if errors.As(err, &ce) {
					ce.Key = fi.Key
				}
				return nil, nil, err
			}
			if f.Cell != cell || f.Epoch != fi.Epoch || f.MinSeq != fi.MinSeq || f.MaxSeq != fi.MaxSeq || f.Snapshot() != fi.Snapshot {
				return nil, nil, &CorruptError{Key: fi.Key, Reason: fmt.Sprintf("header (cell %q, epoch %d, commits %d-%d, snapshot %v) does not match the name",
					f.Cell, f.Epoch, f.MinSeq, f.MaxSeq, f.Snapshot())}
			}
			files = append(files, f)
		}
		return files, res, nil
	}
}

// planEpoch returns the epoch's newest snapshot and the files that follow
// it without a gap, or nil when the epoch holds no file of the log. Files
// without a snapshot are *MissingSnapshotError: every epoch starts with
// one.
func planEpoch(ctx context.Context, s store.Store, cell string, epoch uint64) ([]FileInfo, error) {
	all, err := listEpochFiles(ctx, s, cell, epoch)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, nil
	}
	start, lowest := -1, 0
	for i, fi := range all {
		if fi.Snapshot && (start < 0 || fi.MaxSeq > all[start].MaxSeq) {
			start = i
		}
		if fi.MinSeq < all[lowest].MinSeq {
			lowest = i
		}
	}
	if start < 0 {
		return nil, &MissingSnapshotError{Cell: cell, Epoch: epoch, First: all[lowest].Key}
	}
	plan := []FileInfo{all[start]}
	var rest []FileInfo
	for _, fi := range all {
		if fi.MinSeq > all[start].MaxSeq {
			rest = append(rest, fi)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].MinSeq < rest[j].MinSeq })
	for _, fi := range rest {
		last := plan[len(plan)-1].MaxSeq
		if fi.MinSeq != last+1 {
			return nil, &GapError{Epoch: epoch, After: last, NextMinSeq: fi.MinSeq}
		}
		plan = append(plan, fi)
	}
	return plan, nil
}

// listEpochFiles returns the epoch's files in no particular order.
func listEpochFiles(ctx context.Context, s store.Store, cell string, epoch uint64) ([]FileInfo, error) {
	page, err := store.ListAll(ctx, s, store.ListOptions{Prefix: EpochPrefix(cell, epoch)})
	if err != nil {
		return nil, err
	}
	var all []FileInfo
	for _, o := range page.Objects {
		if fi, ok := ParseKey(cell, epoch, o.Key); ok {
			fi.Size = o.Size
			all = append(all, fi)
		}
	}
	return all, nil
}

// listEpochs returns the cell's epochs, newest first.
func listEpochs(ctx context.Context, s store.Store, cell string) ([]uint64, error) {
	page, err := store.ListAll(ctx, s, store.ListOptions{Prefix: CellPrefix(cell), Delimiter: "/"})
	if err != nil {
		return nil, err
	}
	var epochs []uint64
	for _, p := range page.Prefixes {
		name := strings.TrimSuffix(strings.TrimPrefix(p, CellPrefix(cell)), "/")
		if len(name) < 2 || name[0] != 'e' {
			continue
		}
		if e, err := strconv.ParseUint(name[1:], 10, 64); err == nil && strconv.FormatUint(e, 10) == name[1:] {
			epochs = append(epochs, e)
		}
	}
	sort.Slice(epochs, func(i, j int) bool { return epochs[i] > epochs[j] })
	return epochs, nil
}

// errNotStreamed: the connection declined RestoreWith (driver.ErrUnsupported
// before filling anything); the files are read whole instead.
var errNotStreamed = errors.New("changeset: the connection does not restore from a file")

// restoreStreamed is Restore through RestoreWith: inside the fill, every
// file is streamed and verified (the snapshot's image into the driver's
// file, the changesets into a temporary spool), so a bad file leaves the
// database as it was; then the changesets are applied one at a time.
func restoreStreamed(ctx context.Context, s store.Store, cell string, ir driver.ImageRestorer, sc driver.Sessioner) (*Result, error) {
	var res *Result
	var changes *imagespool.Spool
	defer func() { changes.Close() }()
	filled := false
	err := ir.RestoreWith(ctx, func(w driver.ImageFile) error {
		filled = true
		for attempt := 1; ; attempt++ {
			changes.Close()
			changes = imagespool.New("")
			var err error
			res, err = readStreamed(ctx, s, cell, w, changes)
			if err != nil && store.IsNotFound(err) && attempt < 5 {
				continue // the owner replaced files with a newer snapshot
			}
			if err != nil {
				res = nil
			}
			return err
		}
	})
	switch {
	case !filled && errors.Is(err, driver.ErrUnsupported):
		return nil, errNotStreamed
	case !filled && err != nil:
		return nil, err
	case err != nil && res == nil:
		return nil, err // the restore's own failure (or nothing to restore)
	case err != nil:
		return nil, fmt.Errorf("restore the snapshot %s: %w", res.Files[0].Key, err)
	}
	// Apply the spooled changesets: [file index u32][seq u64][size u64][data].
	var head [20]byte
	var data []byte
	for off := int64(0); off < changes.Size(); {
		if _, err := changes.ReadAt(head[:], off); err != nil {
			return nil, fmt.Errorf("read the spooled changesets: %w", err)
		}
		fi, seq, n := binary.BigEndian.Uint32(head[:]), binary.BigEndian.Uint64(head[4:]), int64(binary.BigEndian.Uint64(head[12:]))
		if int64(cap(data)) < n {
			data = make([]byte, n)
		}
		data = data[:n]
		if _, err := changes.ReadAt(data, off+20); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
			return nil, fmt.Errorf("read the spooled changesets: %w", err)
		}
		off += 20 + n
		if err := sc.ApplyChangeset(ctx, data); err != nil {
			return nil, fmt.Errorf("apply commit %d from %s (the database is only partly restored): %w", seq, res.Files[fi].Key, err)
		}
	}
	return res, nil
}

// readStreamed plans the restore and streams its files: the snapshot's
// image into w, the changesets into changes.
func readStreamed(ctx context.Context, s store.Store, cell string, w driver.ImageFile, changes *imagespool.Spool) (*Result, error) {
	res, err := plan(ctx, s, cell)
	if err != nil {
		return nil, err
	}
	if err := w.Truncate(0); err != nil {
		return nil, &sinkError{err}
	}
	for i, fi := range res.Files {
		var img ImageFile
		if i == 0 {
			img = w
		}
		f, err := readFileStreamed(ctx, s, fi, img, func(r Record) error {
			var head [20]byte
			binary.BigEndian.PutUint32(head[:], uint32(i))
			binary.BigEndian.PutUint64(head[4:], r.Seq)
			binary.BigEndian.PutUint64(head[12:], uint64(len(r.Data)))
			if _, err := changes.Write(head[:]); err != nil {
				return err
			}
			_, err := changes.Write(r.Data)
			return err
		})
		if err != nil {
			return nil, err
		}
		if f.Cell != cell || f.Epoch != fi.Epoch || f.MinSeq != fi.MinSeq || f.MaxSeq != fi.MaxSeq || f.Snapshot() != fi.Snapshot {
			return nil, &CorruptError{Key: fi.Key, Reason: fmt.Sprintf("header (cell %q, epoch %d, commits %d-%d, snapshot %v) does not match the name",
				f.Cell, f.Epoch, f.MinSeq, f.MaxSeq, f.Snapshot())}
		}
	}
	if err := changes.Truncate(changes.Size()); err != nil { // flushes it
		return nil, err
	}
	return res, nil
}

// readFileStreamed streams one file through decodeStream.
func readFileStreamed(ctx context.Context, s store.Store, fi FileInfo, img ImageFile, onChangeset func(Record) error) (*File, error) {
	r, err := store.NewReader(ctx, s, fi.Key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", fi.Key, err)
	}
	defer r.Close()
	f, err := decodeStream(r, r.Size, img, onChangeset)
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			ce.Key = fi.Key
		}
		return nil, err
	}
	return f, nil
}
