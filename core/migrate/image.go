package migrate

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/page"
	"github.com/cellb/cellb/core/store"
)

// Image is a database to import, read page by page from a file: a
// database file as it is (OpenDatabase), or a Litestream replica restored
// into an unlinked temporary file (RestoreLitestream).
type Image struct {
	f        *os.File
	name     string // what it was opened from, for messages
	pageSize uint32
	pages    uint32
}

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// OpenDatabase opens a SQLite database file to import. It is refused
// (*SourceBusyError) while a -wal file with frames or a live -journal lies
// beside it: then the file alone is not the database's newest committed
// state.
// The file must not change until the import ends: stop every program that
// writes it first.
func OpenDatabase(path string) (*Image, error) {
	if hot, err := hotSidecar(path); err != nil || hot != "" {
		if err != nil {
			return nil, err
		}
		return nil, &SourceBusyError{Path: path, Sidecar: hot}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	im, err := readImage(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return im, nil
}

// journalMagic opens the header of a rollback journal that still holds
// pages to roll back (a committed or persisted journal has it zeroed).
var journalMagic = []byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7}

// hotSidecar names the file beside path that holds part of the database's
// state: a write-ahead log with frames (longer than its 32-byte header),
// or a rollback journal whose header is live. SQLite leaves neither after
// its last connection closed cleanly.
func hotSidecar(path string) (string, error) {
	if st, err := os.Stat(path + "-wal"); err == nil && st.Size() > 32 {
		return path + "-wal", nil
	}
	f, err := os.Open(path + "-journal")
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, len(journalMagic))
	if n, _ := io.ReadFull(f, head); n == len(head) && bytes.Equal(head, journalMagic) {
		return path + "-journal", nil
	}
	return "", nil
}

// readImage checks f's SQLite header and takes its page size and count:
// the header's count when SQLite would trust it (bytes 92-95 equal the
// change counter), else the file's size over the page size.
func readImage(f *os.File, name string) (*Image, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, 100)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &NotDatabaseError{Path: name, Reason: fmt.Sprintf("%d bytes, shorter than a SQLite header", st.Size())}
		}
		return nil, err
	}
	if !bytes.Equal(hdr[:16], []byte(sqliteMagic)) {
		return nil, &NotDatabaseError{Path: name, Reason: "it does not start with \"SQLite format 3\""}
	}
	ps := uint32(binary.BigEndian.Uint16(hdr[16:18]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps&(ps-1) != 0 {
		return nil, &NotDatabaseError{Path: name, Reason: fmt.Sprintf("page size %d", ps)}
	}
	if st.Size()%int64(ps) != 0 {
		return nil, &NotDatabaseError{Path: name, Reason: fmt.Sprintf("%d bytes, not a whole number of %d-byte pages", st.Size(), ps)}
	}
	pages := st.Size() / int64(ps)
	if n := binary.BigEndian.Uint32(hdr[28:32]); n != 0 && binary.BigEndian.Uint32(hdr[92:96]) == binary.BigEndian.Uint32(hdr[24:28]) {
		if int64(n) > pages {
			return nil, &NotDatabaseError{Path: name, Reason: fmt.Sprintf("its header counts %d pages, the file holds %d", n, pages)}
		}
		pages = int64(n)
	}
	if pages > int64(^uint32(0)) {
		return nil, &NotDatabaseError{Path: name, Reason: "too many pages"}
	}
	return &Image{f: f, name: name, pageSize: ps, pages: uint32(pages)}, nil
}

// PageSize is the database's page size in bytes.
func (im *Image) PageSize() uint32 { return im.pageSize }

// Pages is the database's size in pages.
func (im *Image) Pages() uint32 { return im.pages }

// Size is the database's size in bytes.
func (im *Image) Size() int64 { return int64(im.pages) * int64(im.pageSize) }

// Close closes the file (a restored replica's temporary file is gone with
// it: it was unlinked when created).
func (im *Image) Close() error { return im.f.Close() }

// eachPage yields pages 1..Pages but the lock page (an LTX file never
// holds it), read one at a time into one buffer.
func (im *Image) eachPage() func() (page.Page, bool, error) {
	lock := ltx.LockPgno(im.pageSize)
	buf := make([]byte, im.pageSize)
	pgno := uint32(0)
	return func() (page.Page, bool, error) {
		pgno++
		if pgno == lock {
			pgno++
		}
		if pgno > im.pages {
			return page.Page{}, false, nil
		}
		if _, err := im.f.ReadAt(buf, int64(pgno-1)*int64(im.pageSize)); err != nil {
			return page.Page{}, false, fmt.Errorf("read page %d of %s: %w", pgno, im.name, err)
		}
		return page.Page{Pgno: pgno, Data: buf}, true, nil
	}
}

// RestoreLitestream rebuilds the newest state of a Litestream (v0.5)
// replica — the store's keys ltx/<level>/<min>-<max>.ltx, chosen by the
// same plan Litestream's restore makes (ltx.Plan) — into an unlinked
// temporary file in dir (the system's temporary directory if empty),
// streaming each file, so memory does not grow with the database.
func RestoreLitestream(ctx context.Context, replica store.Store, dir string) (*Image, error) {
	var files []ltx.FileInfo
	err := store.ListEach(ctx, replica, store.ListOptions{Prefix: layout.LitestreamLTXPrefix}, func(p store.ListPage) error {
		for _, o := range p.Objects {
			if lv, min, max, ok := layout.ParseLitestreamKey(o.Key); ok {
				files = append(files, ltx.FileInfo{Key: o.Key, Level: lv, MinTXID: ltx.TXID(min), MaxTXID: ltx.TXID(max), Size: o.Size, Modified: o.Modified})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the replica: %w", err)
	}
	if len(files) == 0 {
		return nil, &NotDatabaseError{Path: "the replica", Reason: "it holds no " + layout.LitestreamLTXPrefix + "<level>/<min>-<max>.ltx files"}
	}
	plan, err := ltx.Plan(files)
	if err != nil {
		return nil, fmt.Errorf("the replica's files do not form a chain: %w", err)
	}
	f, err := os.CreateTemp(dir, "cellb-import-*.db")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	im := ltx.NewImageTo(f)
	for _, fi := range plan {
		if err := applyFile(ctx, replica, im, fi.Key); err != nil {
			f.Close()
			return nil, err
		}
	}
	if err := im.Finish(); err != nil {
		f.Close()
		return nil, fmt.Errorf("the replica's newest state: %w", err)
	}
	img, err := readImage(f, fmt.Sprintf("the replica's state at TXID %d", im.TXID()))
	if err != nil {
		f.Close()
		return nil, err
	}
	return img, nil
}

// applyFile streams one LTX file of the replica over im (verified as it
// is read).
func applyFile(ctx context.Context, s store.Store, im *ltx.Image, key string) error {
	r, err := store.NewReader(ctx, s, key)
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	defer r.Close()
	if _, err := im.ApplyFrom(r); err != nil {
		return fmt.Errorf("apply %s: %w", key, err)
	}
	return nil
}
