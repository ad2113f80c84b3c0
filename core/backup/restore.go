package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// ErrNothingToRestore: the bucket holds no backup of the cell.
var ErrNothingToRestore = errors.New("the bucket holds no backup of this cell")

// CorruptError is a backup whose bytes do not match the checksum saved
// with it.
type CorruptError struct {
	Key    string
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("backup %s is corrupt: %s", e.Key, e.Reason)
}

// Prefix is where a cell's backups live: "cells/<cell>/backup/".
func Prefix(cell string) string { return layout.Backup().Prefix(cell) }

// Key names the backup of commit seq of epoch (layout.BackupKey).
func Key(cell string, epoch, seq uint64) string { return layout.BackupKey(cell, epoch, seq) }

// Info is one backup in the bucket.
type Info struct {
	Key   string
	Epoch uint64
	Seq   uint64
	Size  int64
}

// parseKey reads a key below Prefix(cell).
func parseKey(cell, key string) (Info, bool) {
	f, ok := layout.ParseBackupKey(cell, key)
	if !ok {
		return Info{}, false
	}
	return Info{Key: key, Epoch: f.Epoch, Seq: f.Seq}, true
}

// List returns the cell's backups, newest (greatest epoch, then seq)
// first. Objects under the prefix that are not backups are ignored.
func List(ctx context.Context, s store.Store, cell string) ([]Info, error) {
	page, err := store.ListAll(ctx, s, store.ListOptions{Prefix: Prefix(cell)})
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, o := range page.Objects {
		if in, ok := parseKey(cell, o.Key); ok {
			in.Size = o.Size
			out = append(out, in)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Epoch != out[j].Epoch {
			return out[i].Epoch > out[j].Epoch
		}
		return out[i].Seq > out[j].Seq
	})
	return out, nil
}

// Result is a restored image and the backup it came from.
type Result struct {
	Image []byte
	Info
}

// Restore reads the cell's newest backup into memory and verifies its
// checksum (RestoreTo into a buffer). It only reads the bucket.
func Restore(ctx context.Context, s store.Store, cell string) (*Result, error) {
	var buf memImage
	info, err := RestoreTo(ctx, s, cell, &buf)
	if err != nil {
		return nil, err
	}
	return &Result{Image: buf.b, Info: *info}, nil
}

// RestoreImage is Restore returning the image only.
func RestoreImage(ctx context.Context, s store.Store, cell string) ([]byte, error) {
	res, err := Restore(ctx, s, cell)
	if err != nil {
		return nil, err
	}
	return res.Image, nil
}

// ImageFile is where RestoreTo writes (driver.ImageFile,
// durability.RestoreSink).
type ImageFile interface {
	io.WriterAt
	Truncate(size int64) error
}

// RestoreTo streams the cell's newest backup into w (emptied first), a
// megabyte at a time, and verifies its SHA-256 at the end: on a mismatch
// (*CorruptError) w holds bytes that must not be used. It only reads the
// bucket. A backup deleted between the listing and the read (pruned by a
// newer save) restarts it.
func RestoreTo(ctx context.Context, s store.Store, cell string, w ImageFile) (*Info, error) {
	for attempt := 1; ; attempt++ {
		info, err := restoreOnce(ctx, s, cell, w)
		if err != nil && store.IsNotFound(err) && attempt < 5 {
			continue
		}
		return info, err
	}
}

// copyChunk is how much of a backup RestoreTo writes at a time.
const copyChunk = 1 << 20

func restoreOnce(ctx context.Context, s store.Store, cell string, w ImageFile) (*Info, error) {
	infos, err := List(ctx, s, cell)
	if err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, ErrNothingToRestore
	}
	newest := infos[0]
	r, err := store.NewReader(ctx, s, newest.Key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", newest.Key, err)
	}
	defer r.Close()
	want, err := hex.DecodeString(r.Metadata[metaSHA256])
	if err != nil || len(want) != sha256.Size {
		return nil, &CorruptError{Key: newest.Key, Reason: "no valid " + metaSHA256 + " metadata"}
	}
	if err := w.Truncate(0); err != nil {
		return nil, err
	}
	h := sha256.New()
	buf := make([]byte, min(max(r.Length, 1), copyChunk))
	var off int64
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			h.Write(buf[:n])
			if _, err := w.WriteAt(buf[:n], off); err != nil {
				return nil, err
			}
			off += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return nil, fmt.Errorf("read %s: %w", newest.Key, rerr)
		}
	}
	if off != r.Length {
		return nil, fmt.Errorf("read %s: %d bytes of %d", newest.Key, off, r.Length)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		return nil, &CorruptError{Key: newest.Key, Reason: "SHA-256 does not match"}
	}
	newest.Size = off
	return &newest, nil
}

// memImage is an ImageFile in memory.
type memImage struct{ b []byte }

func (m *memImage) WriteAt(p []byte, off int64) (int, error) {
	if end := off + int64(len(p)); end > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, end-int64(len(m.b)))...)
	}
	return copy(m.b[off:], p), nil
}

func (m *memImage) Truncate(size int64) error {
	if size <= int64(len(m.b)) {
		m.b = m.b[:size]
	} else {
		m.b = append(m.b, make([]byte, size-int64(len(m.b)))...)
	}
	return nil
}

// restoreInto replaces conn's database with the newest backup: written
// into a file the driver provides (driver.ImageRestorer) as it streams in,
// and checked before it is installed; else read whole and handed to
// Restore.
func restoreInto(ctx context.Context, s store.Store, cell string, conn driver.Conn) (*Info, error) {
	if ir, ok := conn.(driver.ImageRestorer); ok {
		var info *Info
		filled := false
		err := ir.RestoreWith(ctx, func(w driver.ImageFile) error {
			filled = true
			var err error
			info, err = RestoreTo(ctx, s, cell, w)
			return err
		})
		switch {
		case filled && err != nil && info == nil:
			return nil, err // the restore's own failure (or nothing to restore)
		case filled && err != nil:
			return nil, fmt.Errorf("restore into the database: %w", err)
		case filled:
			return info, nil
		case !errors.Is(err, driver.ErrUnsupported):
			return nil, err
		}
	}
	res, err := Restore(ctx, s, cell)
	if err != nil {
		return nil, err
	}
	if err := conn.Restore(ctx, res.Image); err != nil {
		return nil, fmt.Errorf("restore into the database: %w", err)
	}
	return &res.Info, nil
}
