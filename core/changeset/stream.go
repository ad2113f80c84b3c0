package changeset

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// Streaming forms of Encode and Decode: the same bytes, with a snapshot's
// image read from (or written to) a file a megabyte at a time instead of
// held in Record.Data.

// encodeStream returns the bytes Encode(f) returns, as a stream, and
// their count. With img, the image record (Records[0], a snapshot's) takes
// its data from img and its Data is ignored.
func encodeStream(f *File, img *io.SectionReader) (io.Reader, int64, error) {
	if err := f.validate(); err != nil {
		return nil, 0, err
	}
	be := binary.BigEndian
	head := make([]byte, 0, headerFixed+len(f.Cell)+4)
	head = append(head, magic...)
	head = append(head, Version, 0, 0, 0)
	head = be.AppendUint64(head, f.Epoch)
	head = be.AppendUint64(head, f.MinSeq)
	head = be.AppendUint64(head, f.MaxSeq)
	head = be.AppendUint64(head, uint64(f.Timestamp))
	head = be.AppendUint16(head, uint16(len(f.Cell)))
	head = append(head, f.Cell...)
	head = be.AppendUint32(head, uint32(len(f.Records)))
	parts := []io.Reader{bytes.NewReader(head)}
	size := int64(len(head))
	for i, r := range f.Records {
		var data io.Reader = bytes.NewReader(r.Data)
		n := int64(len(r.Data))
		if i == 0 && r.Kind == KindImage && img != nil {
			data, n = io.NewSectionReader(img, 0, img.Size()), img.Size()
		}
		rh := be.AppendUint64(make([]byte, 0, recordHead), r.Seq)
		rh = append(rh, r.Kind)
		rh = be.AppendUint64(rh, uint64(n))
		parts = append(parts, bytes.NewReader(rh), data)
		size += recordHead + n
	}
	return &crcReader{r: io.MultiReader(parts...), h: crc32.New(crcTable)}, size + 4, nil
}

// crcReader passes r through and then its CRC-32C.
type crcReader struct {
	r    io.Reader
	h    hash.Hash32
	tail []byte
	done bool
}

func (c *crcReader) Read(p []byte) (int, error) {
	if !c.done {
		n, err := c.r.Read(p)
		c.h.Write(p[:n])
		if err == io.EOF {
			c.done = true
			c.tail = binary.BigEndian.AppendUint32(nil, c.h.Sum32())
			if n > 0 {
				return n, nil
			}
		} else {
			return n, err
		}
	}
	if len(c.tail) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.tail)
	c.tail = c.tail[n:]
	return n, nil
}

// ImageFile is where a streamed restore writes a snapshot's image
// (driver.ImageFile).
type ImageFile interface {
	io.WriterAt
	Truncate(size int64) error
}

// streamChunk is how much of an image a streamed decode copies at a time.
const streamChunk = 1 << 20

// decodeStream reads one file of size bytes from r with Decode's checks.
// A snapshot's image goes to img (from offset 0, which must be empty);
// each changeset record is handed to onChangeset (its Data valid during
// the call). The returned File's records carry no Data. The checksum is
// verified at the end: img and onChangeset may have seen bytes of a file
// that then fails as corrupt.
func decodeStream(r io.Reader, size int64, img ImageFile, onChangeset func(Record) error) (*File, error) {
	if size < headerFixed+4+4 {
		return nil, corrupt("%d bytes is shorter than any file", size)
	}
	h := crc32.New(crcTable)
	body := &countReader{r: io.TeeReader(io.LimitReader(r, size-4), h)}
	var hb [headerFixed]byte
	if err := body.full(hb[:]); err != nil {
		return nil, err
	}
	if string(hb[:4]) != magic {
		return nil, corrupt("bad magic %q", hb[:4])
	}
	if hb[4] != Version {
		return nil, corrupt("version %d, this reader knows %d", hb[4], Version)
	}
	if hb[5] != 0 || hb[6] != 0 || hb[7] != 0 {
		return nil, corrupt("reserved header bytes are not zero")
	}
	be := binary.BigEndian
	f := &File{
		Epoch:     be.Uint64(hb[8:]),
		MinSeq:    be.Uint64(hb[16:]),
		MaxSeq:    be.Uint64(hb[24:]),
		Timestamp: int64(be.Uint64(hb[32:])),
	}
	nameLen := int64(be.Uint16(hb[40:]))
	if size-4-headerFixed < nameLen+4 {
		return nil, corrupt("truncated header")
	}
	name := make([]byte, nameLen+4)
	if err := body.full(name); err != nil {
		return nil, err
	}
	f.Cell = string(name[:nameLen])
	n := be.Uint32(name[nameLen:])
	left := func() int64 { return size - 4 - body.n }
	if uint64(n) > uint64(left()/recordHead) {
		return nil, corrupt("%d records cannot fit in %d bytes", n, left())
	}
	var data []byte
	for i := uint32(0); i < n; i++ {
		if left() < recordHead {
			return nil, corrupt("record %d is truncated", i)
		}
		var rh [recordHead]byte
		if err := body.full(rh[:]); err != nil {
			return nil, err
		}
		rec := Record{Seq: be.Uint64(rh[:]), Kind: rh[8]}
		rsize := be.Uint64(rh[9:])
		if rsize > uint64(left()) {
			return nil, corrupt("record %d claims %d bytes, %d remain", i, rsize, left())
		}
		f.Records = append(f.Records, rec)
		switch {
		case i == 0 && rec.Kind == KindImage && img != nil:
			buf := make([]byte, min(int64(rsize), streamChunk))
			for off := int64(0); off < int64(rsize); {
				m := min(int64(len(buf)), int64(rsize)-off)
				if err := body.full(buf[:m]); err != nil {
					return nil, err
				}
				if _, err := img.WriteAt(buf[:m], off); err != nil {
					return nil, &sinkError{err}
				}
				off += m
			}
		default:
			if uint64(cap(data)) < rsize {
				data = make([]byte, rsize)
			}
			rec.Data = data[:rsize]
			if err := body.full(rec.Data); err != nil {
				return nil, err
			}
			if rec.Kind == KindChangeset && onChangeset != nil {
				if err := onChangeset(rec); err != nil {
					return nil, &sinkError{err}
				}
			}
		}
	}
	if left() != 0 {
		return nil, corrupt("%d bytes after the last record", left())
	}
	var sum [4]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return nil, fmt.Errorf("read the checksum: %w", err)
	}
	if got := h.Sum32(); got != be.Uint32(sum[:]) {
		return nil, corrupt("checksum %08x, computed %08x", be.Uint32(sum[:]), got)
	}
	if err := f.validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// sinkError is a failure to write what was decoded, not a corrupt file.
type sinkError struct{ err error }

func (e *sinkError) Error() string { return e.err.Error() }
func (e *sinkError) Unwrap() error { return e.err }

// countReader counts what it reads; a short read is a truncated file.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) full(p []byte) error {
	m, err := io.ReadFull(c.r, p)
	c.n += int64(m)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corrupt("truncated after %d bytes", c.n)
	}
	return err
}
