package changeset

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/cellb/cellb/core/layout"
)

// The file format is described in docs/changeset-format.md.

// magic opens every file.
const magic = "CBCS"

// Version is the format version this package writes and reads.
const Version = 1

// Record kinds.
const (
	// KindImage is a whole database image: the state after its commit.
	KindImage byte = 1
	// KindChangeset is one SQLite changeset: the row changes of its
	// commit (and of commits grouped with it that recorded nothing).
	KindChangeset byte = 2
)

const (
	headerFixed = 4 + 1 + 1 + 2 + 8 + 8 + 8 + 8 + 2 // through the cell name length
	recordHead  = 8 + 1 + 8
	maxCellName = 1024
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every decoding failure.
var ErrCorrupt = errors.New("changeset file is corrupt")

// CorruptError says which file is corrupt and why.
type CorruptError struct {
	Key    string // empty when decoding bytes without a name
	Reason string
}

func (e *CorruptError) Error() string {
	if e.Key == "" {
		return "changeset file is corrupt: " + e.Reason
	}
	return fmt.Sprintf("changeset file %s is corrupt: %s", e.Key, e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func corrupt(format string, args ...any) error {
	return &CorruptError{Reason: fmt.Sprintf(format, args...)}
}

// Record is one commit's payload.
type Record struct {
	Seq  uint64
	Kind byte
	Data []byte
}

// File is one uploaded file: the commits MinSeq..MaxSeq of one epoch. A
// snapshot file's first record is an image; records follow in ascending
// Seq. Commits in the range without a record changed nothing the session
// records, or are contained in a later record.
type File struct {
	Cell      string
	Epoch     uint64
	MinSeq    uint64
	MaxSeq    uint64
	Timestamp int64 // Unix milliseconds of the upload
	Records   []Record
}

// Snapshot reports whether the file starts with an image.
func (f *File) Snapshot() bool { return len(f.Records) > 0 && f.Records[0].Kind == KindImage }

// validate checks what Encode and Decode both require.
func (f *File) validate() error {
	if f.Cell == "" || len(f.Cell) > maxCellName {
		return corrupt("cell name of %d bytes", len(f.Cell))
	}
	if f.MinSeq == 0 || f.MaxSeq < f.MinSeq {
		return corrupt("sequence range %d-%d", f.MinSeq, f.MaxSeq)
	}
	prev := uint64(0)
	for i, r := range f.Records {
		if r.Seq < f.MinSeq || r.Seq > f.MaxSeq || r.Seq <= prev {
			return corrupt("record %d has sequence %d (range %d-%d, previous %d)", i, r.Seq, f.MinSeq, f.MaxSeq, prev)
		}
		prev = r.Seq
		switch r.Kind {
		case KindImage:
			if i != 0 {
				return corrupt("record %d is an image; only the first record may be one", i)
			}
		case KindChangeset:
		default:
			return corrupt("record %d has unknown kind %d", i, r.Kind)
		}
	}
	return nil
}

// Encode serializes f.
func Encode(f *File) ([]byte, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	size := headerFixed + len(f.Cell) + 4 + 4
	for _, r := range f.Records {
		size += recordHead + len(r.Data)
	}
	b := make([]byte, 0, size)
	b = append(b, magic...)
	b = append(b, Version, 0, 0, 0)
	b = binary.BigEndian.AppendUint64(b, f.Epoch)
	b = binary.BigEndian.AppendUint64(b, f.MinSeq)
	b = binary.BigEndian.AppendUint64(b, f.MaxSeq)
	b = binary.BigEndian.AppendUint64(b, uint64(f.Timestamp))
	b = binary.BigEndian.AppendUint16(b, uint16(len(f.Cell)))
	b = append(b, f.Cell...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(f.Records)))
	for _, r := range f.Records {
		b = binary.BigEndian.AppendUint64(b, r.Seq)
		b = append(b, r.Kind)
		b = binary.BigEndian.AppendUint64(b, uint64(len(r.Data)))
		b = append(b, r.Data...)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable)), nil
}

// Decode parses and verifies one file. Record data alias data.
func Decode(data []byte) (*File, error) {
	if len(data) < headerFixed+4+4 {
		return nil, corrupt("%d bytes is shorter than any file", len(data))
	}
	if string(data[:4]) != magic {
		return nil, corrupt("bad magic %q", data[:4])
	}
	if data[4] != Version {
		return nil, corrupt("version %d, this reader knows %d", data[4], Version)
	}
	if data[5] != 0 || data[6] != 0 || data[7] != 0 {
		return nil, corrupt("reserved header bytes are not zero")
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, crcTable); got != sum {
		return nil, corrupt("checksum %08x, computed %08x", sum, got)
	}
	be := binary.BigEndian
	f := &File{
		Epoch:     be.Uint64(data[8:]),
		MinSeq:    be.Uint64(data[16:]),
		MaxSeq:    be.Uint64(data[24:]),
		Timestamp: int64(be.Uint64(data[32:])),
	}
	nameLen := int(be.Uint16(data[40:]))
	p := body[headerFixed:]
	if len(p) < nameLen+4 {
		return nil, corrupt("truncated header")
	}
	f.Cell = string(p[:nameLen])
	p = p[nameLen:]
	n := be.Uint32(p)
	p = p[4:]
	if uint64(n) > uint64(len(p)/recordHead) {
		return nil, corrupt("%d records cannot fit in %d bytes", n, len(p))
	}
	f.Records = make([]Record, 0, n)
	for i := uint32(0); i < n; i++ {
		if len(p) < recordHead {
			return nil, corrupt("record %d is truncated", i)
		}
		r := Record{Seq: be.Uint64(p), Kind: p[8]}
		size := be.Uint64(p[9:])
		p = p[recordHead:]
		if size > uint64(len(p)) {
			return nil, corrupt("record %d claims %d bytes, %d remain", i, size, len(p))
		}
		r.Data, p = p[:size:size], p[size:]
		f.Records = append(f.Records, r)
	}
	if len(p) != 0 {
		return nil, corrupt("%d bytes after the last record", len(p))
	}
	if err := f.validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// The key layout is core/layout's:
// cells/<cell>/changeset/e<epoch>/<min:016x>-<max:016x>.<kind>, kind "snap"
// for snapshot files and "cset" for the others.

// CellPrefix is where a cell's changeset log lives.
func CellPrefix(cell string) string { return layout.Changeset().Prefix(cell) }

// EpochPrefix is one epoch's files.
func EpochPrefix(cell string, epoch uint64) string {
	return layout.Changeset().EpochPrefix(cell, epoch)
}

// Key names a file (layout.ChangesetKey).
func Key(cell string, epoch, minSeq, maxSeq uint64, snapshot bool) string {
	return layout.ChangesetKey(cell, epoch, minSeq, maxSeq, snapshot)
}

// FileInfo is a file known by its key.
type FileInfo struct {
	Key      string
	Epoch    uint64
	MinSeq   uint64
	MaxSeq   uint64
	Snapshot bool
	Size     int64
}

// ParseKey reads a key inside EpochPrefix(cell, epoch).
func ParseKey(cell string, epoch uint64, key string) (FileInfo, bool) {
	f, ok := layout.ParseChangesetKey(cell, epoch, key)
	if !ok {
		return FileInfo{}, false
	}
	return FileInfo{Key: key, Epoch: epoch, MinSeq: f.MinSeq, MaxSeq: f.MaxSeq, Snapshot: f.Snapshot}, true
}
