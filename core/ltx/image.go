package ltx

import (
	"errors"
	"fmt"
)

// Image rebuilds a database image from LTX files applied in plan order:
// later pages overwrite earlier ones, the size is the last file's Commit,
// pages beyond it are dropped, and the lock page reads as zeros.
type Image struct {
	pageSize uint32
	commit   uint32
	last     TXID
	data     []byte  // the pages written so far, grown as they arrive
	present  pageSet // the pages supplied
	applied  int
	sink     Sink          // when set, pages go there instead of data
	dec      *blockDecoder // ApplyFrom's, reused from file to file
}

// Sink receives an image's pages at their offsets, for restores that write
// straight to a file instead of holding the image in memory (*os.File is
// one).
type Sink interface {
	WriteAt(p []byte, off int64) (int, error)
	Truncate(size int64) error
}

// NewImage starts an empty image held in memory.
func NewImage() *Image { return &Image{} }

// NewImageTo starts an empty image written to sink, which must start
// empty. Finish sets its final size.
func NewImageTo(sink Sink) *Image { return &Image{sink: sink} }

// ApplyData decodes and verifies an LTX file and lays it over the image in
// one pass, without materialising its pages. On error the image is left
// unusable (its pages may be partly overwritten): start a new one.
func (im *Image) ApplyData(data []byte) (Header, error) {
	h, err := DecodeHeader(data)
	if err != nil {
		return h, err
	}
	if err := im.begin(h); err != nil {
		return h, err
	}
	_, _, err = decode(data, im.pageFunc())
	if err != nil {
		im.applied = -1 << 30 // poisoned
		return h, err
	}
	im.finish(h)
	return h, nil
}

// pageFunc lays one decoded page over the image.
func (im *Image) pageFunc() func(pgno uint32, page []byte) error {
	ps := int64(im.pageSize)
	return func(pgno uint32, page []byte) error {
		if im.sink != nil {
			if _, err := im.sink.WriteAt(page, int64(pgno-1)*ps); err != nil {
				return err
			}
		} else {
			im.grow(pgno)
			copy(im.data[int64(pgno-1)*ps:], page)
		}
		im.present.set(pgno)
		return nil
	}
}

// Apply lays f over the image. Files must continue the chain: the first
// must start at TXID 1 (or at 1 after a snapshot-level file), every later
// one at or before the next TXID, and all share one page size.
func (im *Image) Apply(f *File) error {
	h := f.Header
	if err := im.begin(h); err != nil {
		return err
	}
	ps := int(im.pageSize)
	for _, p := range f.Pages {
		if p.Pgno > h.Commit {
			continue
		}
		if im.sink != nil {
			if _, err := im.sink.WriteAt(p.Data, int64(p.Pgno-1)*int64(ps)); err != nil {
				return err
			}
		} else {
			im.grow(p.Pgno)
			copy(im.data[int(p.Pgno-1)*ps:], p.Data)
		}
		im.present.set(p.Pgno)
	}
	im.finish(h)
	return nil
}

// begin checks that h continues the chain and sizes the image for it.
func (im *Image) begin(h Header) error {
	if im.applied < 0 {
		return corrupt("an earlier file failed to apply to this image", nil)
	}
	if im.applied == 0 {
		if h.MinTXID != 1 {
			return &GapError{After: 0, Next: h.MinTXID}
		}
		im.pageSize = h.PageSize
	} else {
		if h.PageSize != im.pageSize {
			return corrupt(fmt.Sprintf("page size changes from %d to %d at TXID %d", im.pageSize, h.PageSize, h.MinTXID), nil)
		}
		if h.MinTXID > im.last+1 {
			return &GapError{After: im.last, Next: h.MinTXID}
		}
		if h.MaxTXID <= im.last {
			return corrupt(fmt.Sprintf("file %d-%d adds nothing after TXID %d", h.MinTXID, h.MaxTXID, im.last), nil)
		}
	}
	return im.resize(h.Commit)
}

func (im *Image) finish(h Header) {
	im.commit = h.Commit
	im.last = h.MaxTXID
	im.applied++
}

// resize drops the pages past commit (in a sink's file too, so a later
// growth reads zeros there until it writes them). Growth is not prepared
// here but as pages arrive (grow): what a header claims allocates nothing
// before its file supplies the pages.
func (im *Image) resize(commit uint32) error {
	im.present.truncate(commit)
	if im.sink != nil {
		if commit < im.commit {
			if err := im.sink.Truncate(int64(commit) * int64(im.pageSize)); err != nil {
				return err
			}
		}
		return nil
	}
	if n := int(commit) * int(im.pageSize); n < len(im.data) {
		clear(im.data[n:])
		im.data = im.data[:n]
	}
	return nil
}

// grow makes the in-memory image hold page pgno.
func (im *Image) grow(pgno uint32) {
	n := int(pgno) * int(im.pageSize)
	if n <= len(im.data) {
		return
	}
	if n <= cap(im.data) {
		im.data = im.data[:n]
		return
	}
	grown := make([]byte, n, max(n, 2*cap(im.data)))
	copy(grown, im.data)
	im.data = grown
}

// TXID is the last transaction applied.
func (im *Image) TXID() TXID { return im.last }

// PageSize is the image's page size (0 before the first Apply).
func (im *Image) PageSize() uint32 { return im.pageSize }

// Finish checks that every page 1..Commit except the lock page was
// supplied and sets a sink's final size (the lock page, never written,
// reads as zeros).
func (im *Image) Finish() error {
	if err := im.check(); err != nil {
		return err
	}
	if im.sink != nil {
		return im.sink.Truncate(int64(im.commit) * int64(im.pageSize))
	}
	return nil
}

func (im *Image) check() error {
	if im.applied < 0 {
		return corrupt("an earlier file failed to apply to this image", nil)
	}
	if im.applied == 0 {
		return ErrTxNotAvailable
	}
	if pgno := im.present.firstMissing(im.commit, LockPgno(im.pageSize)); pgno != 0 {
		return corrupt(fmt.Sprintf("page %d of %d was never written by the chain up to TXID %d", pgno, im.commit, im.last), nil)
	}
	if im.sink == nil {
		// Every page is there; only a lock page at the end was never
		// written.
		im.grow(im.commit)
	}
	return nil
}

// Bytes checks that every page 1..Commit except the lock page was supplied
// and returns the image. The slice is the Image's own; copy it to keep it
// past further Apply calls.
func (im *Image) Bytes() ([]byte, error) {
	if im.sink != nil {
		return nil, errors.New("ltx: the image was written to a sink; call Finish")
	}
	if err := im.check(); err != nil {
		return nil, err
	}
	return im.data, nil
}
