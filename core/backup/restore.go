package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"

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

// Restore reads the cell's newest backup and verifies its checksum. It
// only reads the bucket. A backup deleted between the listing and the read
// (pruned by a newer save) restarts it.
func Restore(ctx context.Context, s store.Store, cell string) (*Result, error) {
	for attempt := 1; ; attempt++ {
		res, err := restoreOnce(ctx, s, cell)
		if err != nil && store.IsNotFound(err) && attempt < 5 {
			continue
		}
		return res, err
	}
}

// RestoreImage is Restore returning the image only.
func RestoreImage(ctx context.Context, s store.Store, cell string) ([]byte, error) {
	res, err := Restore(ctx, s, cell)
	if err != nil {
		return nil, err
	}
	return res.Image, nil
}

func restoreOnce(ctx context.Context, s store.Store, cell string) (*Result, error) {
	infos, err := List(ctx, s, cell)
	if err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, ErrNothingToRestore
	}
	newest := infos[0]
	obj, err := s.Get(ctx, newest.Key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", newest.Key, err)
	}
	want, err := hex.DecodeString(obj.Metadata[metaSHA256])
	if err != nil || len(want) != sha256.Size {
		return nil, &CorruptError{Key: newest.Key, Reason: "no valid " + metaSHA256 + " metadata"}
	}
	if got := sha256.Sum256(obj.Data); !bytes.Equal(got[:], want) {
		return nil, &CorruptError{Key: newest.Key, Reason: "SHA-256 does not match"}
	}
	return &Result{Image: obj.Data, Info: newest}, nil
}
