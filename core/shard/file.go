package shard

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cellb/cellb/core/atomicfile"
)

// MaxShards bounds the shard count: each held shard keeps a file open.
const MaxShards = 4096

const (
	layoutName   = "shards.json"
	layoutFormat = 1
	layoutHash   = "fnv1a64"
)

// layout is shards.json, written once when a directory is first opened.
type layout struct {
	Format int    `json:"format"`
	Shards int    `json:"shards"`
	Hash   string `json:"hash"`
}

func lockPath(dir string, i int) string {
	return filepath.Join(dir, "shard-"+strconv.Itoa(i)+".lock")
}

// decodeLayout reads shards.json strictly: an unknown format or hash is a
// layout this code does not understand, not one to overwrite.
func decodeLayout(path string, data []byte) (layout, error) {
	var l layout
	if err := json.Unmarshal(data, &l); err != nil {
		return l, &DamagedError{Path: path, Reason: "not a shard layout: " + err.Error()}
	}
	switch {
	case l.Format != layoutFormat:
		return l, &DamagedError{Path: path, Reason: fmt.Sprintf("unknown layout format %d", l.Format)}
	case l.Hash != layoutHash:
		return l, &DamagedError{Path: path, Reason: fmt.Sprintf("unknown placement hash %q", l.Hash)}
	case l.Shards < 1 || l.Shards > MaxShards:
		return l, &DamagedError{Path: path, Reason: fmt.Sprintf("shard count %d out of range", l.Shards)}
	}
	return l, nil
}

// prepare makes sure dir is laid out for n shards. The first opener creates
// every shard file and then publishes shards.json create-only; from then on
// a missing shard file means one was deleted, which prepare does not repair
// (see DamagedError).
func prepare(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, layoutName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := create(dir, n); err != nil {
			return err
		}
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return err
	}
	l, err := decodeLayout(path, data)
	if err != nil {
		return err
	}
	if l.Shards != n {
		return &CountMismatchError{Dir: dir, Layout: l.Shards, Requested: n}
	}
	return nil
}

// create writes the shard files, then links a complete shards.json into
// place. Two processes racing here both create (or find) the same files;
// one link wins and the other reads the winner's layout.
func create(dir string, n int) error {
	for i := 0; i < n; i++ {
		f, err := os.OpenFile(lockPath(dir, i), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	body, err := json.Marshal(layout{Format: layoutFormat, Shards: n, Hash: layoutHash})
	if err != nil {
		return err
	}
	tmp, err := atomicfile.Temp(dir, "."+layoutName+".*", func(f *os.File) error {
		_, err := f.Write(append(body, '\n'))
		return err
	})
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, filepath.Join(dir, layoutName)); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return atomicfile.SyncDir(dir)
}

// A shard file holds the shard's last granted epoch in two 16-byte slots,
// epoch E in slot E%2: "CBSE", E as 8 bytes big-endian, then the CRC-32
// (IEEE) of those 12 bytes. A write that tears damages only the slot being
// written, whose epoch was never handed out, and the other slot still holds
// the epoch before it.
const (
	slotSize  = 16
	slotMagic = "CBSE"
)

func encodeSlot(epoch uint64) []byte {
	b := make([]byte, slotSize)
	copy(b, slotMagic)
	binary.BigEndian.PutUint64(b[4:12], epoch)
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[:12]))
	return b
}

type slotState int

const (
	slotEmpty slotState = iota // absent or all zero: never written
	slotValid
	slotDamaged
)

func decodeSlot(b []byte, index int) (uint64, slotState) {
	if len(b) == 0 || allZero(b) {
		return 0, slotEmpty
	}
	if len(b) < slotSize || string(b[:4]) != slotMagic ||
		binary.BigEndian.Uint32(b[12:16]) != crc32.ChecksumIEEE(b[:12]) {
		return 0, slotDamaged
	}
	e := binary.BigEndian.Uint64(b[4:12])
	if e%2 != uint64(index) {
		return 0, slotDamaged
	}
	return e, slotValid
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// decodeEpoch reads the last granted epoch from the start of a shard file
// (at most two slots). Only states that writes and torn writes can leave
// are accepted; anything else is damage.
func decodeEpoch(data []byte) (uint64, error) {
	if len(data) > 2*slotSize {
		data = data[:2*slotSize]
	}
	s0 := data[:min(len(data), slotSize)]
	s1 := data[len(s0):]
	e0, st0 := decodeSlot(s0, 0)
	e1, st1 := decodeSlot(s1, 1)
	switch {
	case st0 == slotValid || st1 == slotValid:
		return max(e0, e1), nil
	case st0 == slotEmpty:
		// Nothing granted yet, or the first grant's write (slot 1) tore.
		return 0, nil
	}
	return 0, errors.New("neither epoch slot is readable")
}

// readEpoch reads f's last granted epoch.
func readEpoch(f *os.File) (uint64, error) {
	buf := make([]byte, 2*slotSize)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	e, err := decodeEpoch(buf[:n])
	if err != nil {
		return 0, &DamagedError{Path: f.Name(), Reason: err.Error()}
	}
	return e, nil
}

// writeEpoch records epoch in its slot and waits for the disk.
func writeEpoch(f *os.File, epoch uint64) error {
	if _, err := f.WriteAt(encodeSlot(epoch), int64(epoch%2)*slotSize); err != nil {
		return err
	}
	return f.Sync()
}
