package wal

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// walFile builds WAL bytes the way SQLite writes them, for tests that need
// shapes the vectors do not have.
type walFile struct {
	h      Header
	data   []byte
	off    int // where the next frame is written
	s1, s2 uint32
}

func newWAL(pageSize int, bigEndian bool, salt1, salt2 uint32) *walFile {
	w := &walFile{}
	magic := MagicLittleEndian
	if bigEndian {
		magic = MagicBigEndian
	}
	w.writeHeader(Header{Magic: magic, Version: FormatVersion, PageSize: pageSize, Salt1: salt1, Salt2: salt2})
	return w
}

func (w *walFile) writeHeader(h Header) {
	var b [HeaderSize]byte
	be := binary.BigEndian
	be.PutUint32(b[0:], h.Magic)
	be.PutUint32(b[4:], h.Version)
	be.PutUint32(b[8:], uint32(h.PageSize))
	be.PutUint32(b[12:], h.CheckpointSeq)
	be.PutUint32(b[16:], h.Salt1)
	be.PutUint32(b[20:], h.Salt2)
	h.Checksum1, h.Checksum2 = Checksum(h.Magic&1 == 1, 0, 0, b[:24])
	be.PutUint32(b[24:], h.Checksum1)
	be.PutUint32(b[28:], h.Checksum2)
	if len(w.data) < HeaderSize {
		w.data = make([]byte, HeaderSize)
	}
	copy(w.data, b[:])
	w.h, w.off, w.s1, w.s2 = h, HeaderSize, h.Checksum1, h.Checksum2
}

// restart models SQLite restarting the log after a checkpoint: a new
// header (sequence+1, salt1+1, new salt2) and frames written from the
// start again, over the old ones.
func (w *walFile) restart(salt2 uint32) {
	h := w.h
	h.CheckpointSeq++
	h.Salt1++
	h.Salt2 = salt2
	w.writeHeader(h)
}

// page returns a page whose bytes are derived from tag.
func (w *walFile) page(tag byte) []byte {
	p := make([]byte, w.h.PageSize)
	for i := range p {
		p[i] = tag + byte(i*7)
	}
	return p
}

// frame appends a valid frame.
func (w *walFile) frame(pgno, dbSize uint32, page []byte) *walFile {
	return w.frameWith(pgno, dbSize, page, w.h.Salt1, w.h.Salt2, false)
}

// frameWith appends a frame with the given salts; corrupt flips its
// checksum. The running checksum only advances over good frames.
func (w *walFile) frameWith(pgno, dbSize uint32, page []byte, salt1, salt2 uint32, corrupt bool) *walFile {
	if len(page) != w.h.PageSize {
		panic("page size")
	}
	fr := make([]byte, FrameHeaderSize+len(page))
	be := binary.BigEndian
	be.PutUint32(fr[0:], pgno)
	be.PutUint32(fr[4:], dbSize)
	be.PutUint32(fr[8:], salt1)
	be.PutUint32(fr[12:], salt2)
	copy(fr[FrameHeaderSize:], page)
	c1, c2 := Checksum(w.h.BigEndianChecksum(), w.s1, w.s2, fr[:8])
	c1, c2 = Checksum(w.h.BigEndianChecksum(), c1, c2, page)
	if corrupt {
		c2 ^= 1
	} else {
		w.s1, w.s2 = c1, c2
	}
	be.PutUint32(fr[16:], c1)
	be.PutUint32(fr[20:], c2)
	end := w.off + len(fr)
	if end > len(w.data) {
		w.data = append(w.data, make([]byte, end-len(w.data))...)
	}
	copy(w.data[w.off:], fr)
	w.off = end
	return w
}

func (w *walFile) bytes() []byte { return append([]byte(nil), w.data...) }

// prefixReader exposes only the first n bytes of b, like a log that has
// not been written any further yet.
type prefixReader struct {
	b []byte
	n int
}

func (p prefixReader) ReadAt(dst []byte, off int64) (int, error) {
	return bytesReader(p.b[:min(p.n, len(p.b))]).ReadAt(dst, off)
}

type bytesReader []byte

func (b bytesReader) ReadAt(dst []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(dst, b[off:])
	if n < len(dst) {
		return n, io.EOF
	}
	return n, nil
}

// vectorDir returns the celld-ltx-golden vector directory: CELLB_TESTDATA,
// else ../shared/testdata next to the checkout (the directory holding
// go.work). Without it the test is skipped, except under CI=true.
func vectorDir(t testing.TB) string {
	t.Helper()
	var root string
	if d := os.Getenv("CELLB_TESTDATA"); d != "" {
		root = d
	} else if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
				root = filepath.Join(dir, "..", "shared", "testdata")
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	dir := filepath.Join(root, "celld-ltx-golden")
	if st, err := os.Stat(dir); root == "" || err != nil || !st.IsDir() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("test vectors missing at %q: CI must provide ../shared/testdata next to the checkout", dir)
		}
		t.Skipf("test vectors missing at %q; set CELLB_TESTDATA to the shared/testdata directory", dir)
	}
	return dir
}

func readVector(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorDir(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
