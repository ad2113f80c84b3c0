//go:build unix

package fs

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/cellb/cellb/core/store"
	"golang.org/x/sys/unix"
)

// identity names one file version without reading it. Every write publishes
// a new inode by rename, so the inode number changes on each write; size
// and modification time guard against an inode number being reused after a
// deletion, or a file being rewritten in place by another program. The
// device number is left out on purpose: btrfs and overlay file systems
// hand out a new one at each mount, which would make every record stale
// after a reboot. The bucket directory is one file system (the store's
// renames could not cross a mount point anyway), so inodes are unique in it.
type identity struct {
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime_ns"`
}

var errNoInode = errors.New("the file system does not report inode numbers (os.FileInfo.Sys is not a *syscall.Stat_t)")

// identityOf reads the identity of a file from its FileInfo.
func identityOf(fi os.FileInfo) (identity, error) {
	id := identity{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		id.Ino = uint64(st.Ino)
	case *unix.Stat_t:
		id.Ino = uint64(st.Ino)
	default:
		return identity{}, errNoInode
	}
	return id, nil
}

// record is what the store knows about one published file of a key.
type record struct {
	Version  store.Version     `json:"version"`
	File     identity          `json:"file"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Headers are the object's content headers, versioned with the body
	// like its metadata. Absent in records written before they existed.
	Headers *store.ContentHeaders `json:"headers,omitempty"`
}

// headers returns the record's content headers.
func (r *record) headers() store.ContentHeaders {
	if r.Headers == nil {
		return store.ContentHeaders{}
	}
	return *r.Headers
}

// sidecar is the file kept for each key under recordDir. It names the file
// the last writer published (Cur) and the one it replaced (Prev). The
// writer makes the sidecar durable before it renames its file into place,
// so whichever of the two files a reader finds, the sidecar describes it —
// including after a crash between the two renames, when Prev still holds
// the object's true version.
type sidecar struct {
	Format int     `json:"format"`
	Key    string  `json:"key"`
	Cur    *record `json:"cur"`
	Prev   *record `json:"prev,omitempty"`
}

// sidecarFormat is the only layout version this code writes and reads.
const sidecarFormat = 1

// match returns the record describing the file with identity id, or nil.
func (sc *sidecar) match(id identity) *record {
	if sc == nil {
		return nil
	}
	if sc.Cur != nil && sc.Cur.File == id {
		return sc.Cur
	}
	if sc.Prev != nil && sc.Prev.File == id {
		return sc.Prev
	}
	return nil
}

func encodeSidecar(sc *sidecar) ([]byte, error) { return json.Marshal(sc) }

var errBadSidecar = errors.New("malformed sidecar record")

// decodeSidecar parses a sidecar and checks that it belongs to key. A
// record that fails any check is rejected as a whole: the store then treats
// the object as written by another program rather than trust half of it.
// Unknown fields are ignored, so a later version of this package may add
// optional ones without a new format number.
func decodeSidecar(data []byte, key string) (*sidecar, error) {
	var sc sidecar
	if err := json.Unmarshal(data, &sc); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadSidecar, err)
	}
	switch {
	case sc.Format != sidecarFormat:
		return nil, fmt.Errorf("%w: format %d, want %d", errBadSidecar, sc.Format, sidecarFormat)
	case sc.Key != key:
		return nil, fmt.Errorf("%w: it names key %q", errBadSidecar, sc.Key)
	case sc.Cur == nil:
		return nil, fmt.Errorf("%w: no current record", errBadSidecar)
	}
	for _, r := range []*record{sc.Cur, sc.Prev} {
		if r == nil {
			continue
		}
		if r.Version == "" {
			return nil, fmt.Errorf("%w: empty version", errBadSidecar)
		}
		if err := store.ValidateMetadata(r.Metadata); err != nil {
			return nil, fmt.Errorf("%w: %w", errBadSidecar, err)
		}
		if err := store.ValidateHeaders(r.headers()); err != nil {
			return nil, fmt.Errorf("%w: %w", errBadSidecar, err)
		}
	}
	return &sc, nil
}

// newVersion returns a fresh random version: 128 bits, so two writes never
// share one, even when their bodies are equal.
func newVersion() store.Version { return store.Version(rand.Text()) }

// foreignVersion is the version of a file no CellB writer recorded (copied
// in with ordinary tools, or rewritten in place): derived from its
// identity, so it changes whenever the file does. It starts with "x-",
// which newVersion's alphabet cannot produce.
func foreignVersion(id identity) store.Version {
	var b [24]byte
	binary.BigEndian.PutUint64(b[0:], id.Ino)
	binary.BigEndian.PutUint64(b[8:], uint64(id.Size))
	binary.BigEndian.PutUint64(b[16:], uint64(id.Mtime))
	h := sha256.Sum256(b[:])
	return store.Version("x-" + hex.EncodeToString(h[:16]))
}
