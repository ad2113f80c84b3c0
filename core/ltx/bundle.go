package ltx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A bundle (celld's CLB1, celld-node-log.md §4) carries level-0 LTX files of
// many cells in one object: the files' bytes back to back, then a footer
// of one row per file, the footer's length and the magic "CLB1":
//
//	payload_0 ‖ … ‖ payload_{n-1} ‖ row_0 ‖ … ‖ row_{n-1} ‖ u32 LE footer_len ‖ "CLB1"
//	row = u16 LE cell_len ‖ cell ‖ u64 LE cell_epoch ‖ u64 LE txid ‖ u64 LE offset ‖ u64 LE len
//
// Offsets count from the object's first byte. The format has no checksum of
// its own: every payload is an LTX file with its own.

// BundleMagic ends every bundle.
const BundleMagic = "CLB1"

// BundleTrailerSize is the footer length and the magic: the last bytes of a
// bundle, which a reader fetches first to learn where the footer starts.
const BundleTrailerSize = 8

// ErrCorruptBundle is matched (errors.Is) by every *BundleError.
var ErrCorruptBundle = errors.New("corrupt bundle")

// BundleError reports a bundle that cannot be read. The bundle is left as
// it is.
type BundleError struct {
	Key    string // the object key, when known
	Reason string
}

func (e *BundleError) Error() string {
	msg := "corrupt bundle"
	if e.Key != "" {
		msg += " " + e.Key
	}
	return msg + ": " + e.Reason
}

func (e *BundleError) Unwrap() error { return ErrCorruptBundle }

func badBundle(format string, args ...any) *BundleError {
	return &BundleError{Reason: fmt.Sprintf(format, args...)}
}

// BundleEntry is one LTX file to put in a bundle.
type BundleEntry struct {
	Cell      string
	CellEpoch uint64
	TXID      TXID
	Data      []byte
}

// BundleRow locates one LTX file in a bundle: the cell and epoch it
// belongs to, its TXID, and its bytes' place in the object.
type BundleRow struct {
	Cell      string
	CellEpoch uint64
	TXID      TXID
	Offset    uint64
	Len       uint64
}

// EncodeBundle lays entries out as a CLB1 bundle, in the order given.
func EncodeBundle(entries []BundleEntry) ([]byte, error) {
	size, footer := 0, 0
	for _, e := range entries {
		if len(e.Cell) > math.MaxUint16 {
			return nil, fmt.Errorf("%w: a bundle row's cell name is %d bytes, more than %d", ErrInvalidInput, len(e.Cell), math.MaxUint16)
		}
		size += len(e.Data)
		footer += 2 + len(e.Cell) + 32
	}
	if uint64(footer) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: a bundle footer of %d bytes does not fit its 32-bit length", ErrInvalidInput, footer)
	}
	out := make([]byte, 0, size+footer+BundleTrailerSize)
	for _, e := range entries {
		out = append(out, e.Data...)
	}
	var off uint64
	for _, e := range entries {
		out = binary.LittleEndian.AppendUint16(out, uint16(len(e.Cell)))
		out = append(out, e.Cell...)
		out = binary.LittleEndian.AppendUint64(out, e.CellEpoch)
		out = binary.LittleEndian.AppendUint64(out, uint64(e.TXID))
		out = binary.LittleEndian.AppendUint64(out, off)
		out = binary.LittleEndian.AppendUint64(out, uint64(len(e.Data)))
		off += uint64(len(e.Data))
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(footer))
	return append(out, BundleMagic...), nil
}

// BundleFooterLen reads a bundle's trailer (its last BundleTrailerSize
// bytes) of an object of size bytes and returns the footer's length; the
// footer is the footerLen bytes before the trailer.
func BundleFooterLen(trailer []byte, size int64) (uint32, error) {
	if len(trailer) != BundleTrailerSize || size < BundleTrailerSize {
		return 0, badBundle("%d bytes: shorter than the %d-byte trailer", size, BundleTrailerSize)
	}
	if string(trailer[4:]) != BundleMagic {
		return 0, badBundle("no %s magic at its end", BundleMagic)
	}
	n := binary.LittleEndian.Uint32(trailer)
	if uint64(n) > uint64(size-BundleTrailerSize) {
		return 0, badBundle("footer of %d bytes is longer than the %d bytes before the trailer", n, size-BundleTrailerSize)
	}
	return n, nil
}

// DecodeBundleFooter parses a bundle's footer (the bytes BundleFooterLen
// placed) of an object of size bytes. Every row must lie inside the
// object; payloads are not read, nor required to be contiguous, as celld
// reads them.
func DecodeBundleFooter(footer []byte, size int64) ([]BundleRow, error) {
	var rows []BundleRow
	for p := footer; len(p) > 0; {
		if len(p) < 2 {
			return nil, badBundle("footer ends inside a row")
		}
		n := int(binary.LittleEndian.Uint16(p))
		if len(p) < 2+n+32 {
			return nil, badBundle("footer ends inside a row")
		}
		r := BundleRow{Cell: string(p[2 : 2+n])}
		q := p[2+n:]
		r.CellEpoch = binary.LittleEndian.Uint64(q)
		r.TXID = TXID(binary.LittleEndian.Uint64(q[8:]))
		r.Offset = binary.LittleEndian.Uint64(q[16:])
		r.Len = binary.LittleEndian.Uint64(q[24:])
		end := r.Offset + r.Len
		if end < r.Offset || end > uint64(size) {
			return nil, badBundle("row %d (%s, epoch %d, TXID %d) lies past the object's %d bytes", len(rows), r.Cell, r.CellEpoch, r.TXID, size)
		}
		rows = append(rows, r)
		p = q[32:]
	}
	return rows, nil
}

// DecodeBundle parses a whole bundle's rows.
func DecodeBundle(data []byte) ([]BundleRow, error) {
	size := int64(len(data))
	if size < BundleTrailerSize {
		return nil, badBundle("%d bytes: shorter than the %d-byte trailer", size, BundleTrailerSize)
	}
	n, err := BundleFooterLen(data[size-BundleTrailerSize:], size)
	if err != nil {
		return nil, err
	}
	start := size - BundleTrailerSize - int64(n)
	return DecodeBundleFooter(data[start:size-BundleTrailerSize], size)
}

// Payload is the row's bytes in data, the whole bundle.
func (r BundleRow) Payload(data []byte) []byte { return data[r.Offset : r.Offset+r.Len] }
