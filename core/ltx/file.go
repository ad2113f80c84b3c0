package ltx

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	sf "github.com/superfly/ltx"

	"github.com/cellb/cellb/core/page"
)

// TXID is a transaction id within one epoch's chain; the first is 1.
type TXID uint64

// HeaderFlagNoChecksum marks a file that does not track the rolling database
// checksum. celld sets it on everything it writes, and so does CellB.
const HeaderFlagNoChecksum = sf.HeaderFlagNoChecksum

// Header is the part of an LTX header CellB reads and writes.
type Header struct {
	Flags     uint32
	PageSize  uint32
	Commit    uint32 // database size in pages after the file is applied
	MinTXID   TXID
	MaxTXID   TXID
	Timestamp int64 // Unix milliseconds
	// PreApplyChecksum is zero when NoChecksum is set (as CellB writes).
	PreApplyChecksum uint64
	WALOffset        int64
	WALSize          int64
	WALSalt1         uint32
	WALSalt2         uint32
	NodeID           uint64
}

// IsSnapshot reports whether the file starts a chain (MinTXID 1): it then
// holds every page of the database.
func (h Header) IsSnapshot() bool { return h.MinTXID == 1 }

// LockPgno is the page SQLite never stores (it holds the pending-byte lock).
func (h Header) LockPgno() uint32 { return LockPgno(h.PageSize) }

// LockPgno is the lock page for a page size.
func LockPgno(pageSize uint32) uint32 { return sf.LockPgno(pageSize) }

// File is a decoded LTX file.
type File struct {
	Header Header
	// Pages are in ascending page order.
	Pages             []page.Page
	PostApplyChecksum uint64
	FileChecksum      uint64
}

// Decode parses and verifies a whole LTX file: the header, every page
// (either page layout: LZ4 blocks or legacy LZ4 frames), the page index and
// the file checksum. It also enforces what a restore relies on: pages in
// strictly ascending order, none beyond Commit, none at the lock page, and a
// snapshot holding every page.
func Decode(data []byte) (*File, error) {
	f := &File{}
	h, tr, err := decode(data, func(pgno uint32, data []byte) error {
		f.Pages = append(f.Pages, page.Page{Pgno: pgno, Data: append([]byte(nil), data...)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	f.Header = h
	f.PostApplyChecksum, f.FileChecksum = tr[0], tr[1]
	return f, nil
}

// decode walks a file, calling page for each page in order with a buffer
// that is reused for the next page, and verifies everything Decode promises.
// Pages reach the callback before the file checksum is known: a caller
// must discard what it built if decode fails.
func decode(data []byte, page func(pgno uint32, data []byte) error) (h Header, trailer [2]uint64, err error) {
	if len(data) < sf.HeaderSize+sf.PageHeaderSize+8+sf.TrailerSize {
		return h, trailer, corrupt(fmt.Sprintf("only %d bytes, shorter than the smallest LTX file", len(data)), nil)
	}
	return decodeStream(bytes.NewReader(data), func(h Header) error { return prescan(data, h.PageSize) }, page)
}

// decodeStream is decode over a stream: check, run once the header is
// known, must make sure no length field of the rest of r can make the codec
// allocate more than a page's bound (prescan for a whole file, guardReader
// for a stream).
func decodeStream(r io.Reader, check func(Header) error, page func(pgno uint32, data []byte) error) (h Header, trailer [2]uint64, err error) {
	// The codec is third-party; a panic on hostile input must not take
	// the process down or pass as success.
	defer func() {
		if r := recover(); r != nil {
			err = corrupt("decoder panicked", fmt.Errorf("%v", r))
		}
	}()
	dec := sf.NewDecoder(r)
	dec.SetRetainPageIndex(false) // the index is checked, not kept
	if err := dec.DecodeHeader(); err != nil {
		return h, trailer, corrupt("bad header", err)
	}
	h = fromSF(dec.Header())
	if err := check(h); err != nil {
		return h, trailer, err
	}
	if h.IsSnapshot() && h.Commit == 0 {
		return h, trailer, corrupt("snapshot with a zero page count", nil)
	}
	lock := h.LockPgno()
	var prev uint32
	buf := make([]byte, h.PageSize)
	for {
		var ph sf.PageHeader
		if err := dec.DecodePage(&ph, buf); err == io.EOF {
			break
		} else if err != nil {
			return h, trailer, corrupt(fmt.Sprintf("bad page after page %d", prev), err)
		}
		switch {
		case ph.Pgno == 0:
			return h, trailer, corrupt("page number 0", nil)
		case ph.Pgno <= prev:
			return h, trailer, corrupt(fmt.Sprintf("page %d follows page %d: pages out of order", ph.Pgno, prev), nil)
		case ph.Pgno > h.Commit:
			return h, trailer, corrupt(fmt.Sprintf("page %d is beyond the commit size of %d pages", ph.Pgno, h.Commit), nil)
		case ph.Pgno == lock:
			return h, trailer, corrupt(fmt.Sprintf("page %d is the lock page", ph.Pgno), nil)
		}
		if h.IsSnapshot() {
			want := prev + 1
			if want == lock {
				want++
			}
			if ph.Pgno != want {
				return h, trailer, corrupt(fmt.Sprintf("snapshot skips from page %d to page %d", prev, ph.Pgno), nil)
			}
		}
		prev = ph.Pgno
		if err := page(ph.Pgno, buf); err != nil {
			return h, trailer, err
		}
	}
	if h.IsSnapshot() {
		last := h.Commit
		if last == lock {
			last--
		}
		if prev != last {
			return h, trailer, corrupt(fmt.Sprintf("snapshot ends at page %d but the database has %d pages", prev, h.Commit), nil)
		}
	}
	if err := dec.Close(); err != nil {
		return h, trailer, corrupt("bad trailer or checksum", err)
	}
	tr := dec.Trailer()
	return h, [2]uint64{uint64(tr.PostApplyChecksum), uint64(tr.FileChecksum)}, nil
}

// DecodeHeader parses only the 100-byte header.
func DecodeHeader(data []byte) (Header, error) {
	if len(data) < sf.HeaderSize {
		return Header{}, corrupt(fmt.Sprintf("only %d bytes, shorter than a header", len(data)), nil)
	}
	var sh sf.Header
	if err := sh.UnmarshalBinary(data[:sf.HeaderSize]); err != nil {
		return Header{}, corrupt("bad header", err)
	}
	if err := sh.Validate(); err != nil {
		return Header{}, corrupt("bad header", err)
	}
	return fromSF(sh), nil
}

// ErrInvalidInput is matched by errors from Encode about its arguments.
var ErrInvalidInput = errors.New("invalid LTX input")

// Encode writes an LTX file holding pages (ascending, each PageSize bytes).
// A zero Flags field is replaced by HeaderFlagNoChecksum, as celld writes;
// with NoChecksum the checksums are zero. A snapshot (MinTXID 1) must hold
// every page 1..Commit except the lock page. Page 1 is written in WAL mode
// (WALHeaderPage), as celld writes it, whatever the local journal mode.
func Encode(h Header, pages []page.Page) ([]byte, error) {
	var buf bytes.Buffer
	i := 0
	_, err := EncodeTo(&buf, h, func() (page.Page, bool, error) {
		if i == len(pages) {
			return page.Page{}, false, nil
		}
		i++
		return pages[i-1], true, nil
	})
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Verify checks a file with the codec alone (header, pages, index, file
// checksum), the way an independent reader would.
func Verify(data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = corrupt("decoder panicked", fmt.Errorf("%v", r))
		}
	}()
	if err := sf.NewDecoder(bytes.NewReader(data)).Verify(); err != nil {
		return corrupt("verification failed", err)
	}
	return nil
}

// VerifyFrom is Verify over a stream: it reads the file once, holding one
// page at a time (memory does not grow with the file), and returns its
// header.
func VerifyFrom(r io.Reader) (h Header, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = corrupt("decoder panicked", fmt.Errorf("%v", p))
		}
	}()
	dec := sf.NewDecoder(r)
	if err := dec.Verify(); err != nil {
		return Header{}, corrupt("verification failed", err)
	}
	return fromSF(dec.Header()), nil
}

func fromSF(h sf.Header) Header {
	return Header{
		Flags: h.Flags, PageSize: h.PageSize, Commit: h.Commit,
		MinTXID: TXID(h.MinTXID), MaxTXID: TXID(h.MaxTXID), Timestamp: h.Timestamp,
		PreApplyChecksum: uint64(h.PreApplyChecksum),
		WALOffset:        h.WALOffset, WALSize: h.WALSize, WALSalt1: h.WALSalt1, WALSalt2: h.WALSalt2,
		NodeID: h.NodeID,
	}
}

func toSF(h Header) sf.Header {
	return sf.Header{
		Version: sf.Version, Flags: h.Flags, PageSize: h.PageSize, Commit: h.Commit,
		MinTXID: sf.TXID(h.MinTXID), MaxTXID: sf.TXID(h.MaxTXID), Timestamp: h.Timestamp,
		PreApplyChecksum: sf.Checksum(h.PreApplyChecksum),
		WALOffset:        h.WALOffset, WALSize: h.WALSize, WALSalt1: h.WALSalt1, WALSalt2: h.WALSalt2,
		NodeID: h.NodeID,
	}
}
