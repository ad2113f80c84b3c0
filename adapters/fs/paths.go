package fs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/cellb/cellb/core/store"
)

// The store's own records live in one directory at the root of the bucket,
// which no key may name and which listings skip.
const (
	metaDir   = ".cellb-meta"
	tmpDir    = metaDir + "/tmp"   // temporary files before their rename
	lockDir   = metaDir + "/locks" // one flock(2) file per stripe
	recordDir = metaDir + "/obj"   // sidecar records: version and metadata
)

// maxSegment is the longest file name common local file systems accept
// (NAME_MAX on Linux, macOS and the BSDs).
const maxSegment = 255

// stripes is how many lock files share the keys. A writer holds one stripe
// for a few fsyncs, so unrelated keys rarely wait for each other, and the
// directory never grows with the number of keys.
const stripes = 256

var errReserved = errors.New("the first path segment " + metaDir + " is reserved for the fs store's own records")

// checkKey applies the local file system's own limits to a key the Bucket
// has validated: the store's directory is not a key, and no segment is
// longer than a file name may be.
func checkKey(key string) error {
	first, _, _ := strings.Cut(key, "/")
	if strings.EqualFold(first, metaDir) {
		return fmt.Errorf("%w: %w", store.ErrInvalidKey, errReserved)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if len(seg) > maxSegment {
			return fmt.Errorf("%w: path segment of %d bytes is longer than %d, the file name limit", store.ErrInvalidKey, len(seg), maxSegment)
		}
	}
	return nil
}

// keyHash names a key in the store's own directories.
func keyHash(key string) [sha256.Size]byte { return sha256.Sum256([]byte(key)) }

// stripeOf picks the lock stripe of a key.
func stripeOf(key string) int { return int(keyHash(key)[0]) }

// recordPath is where a key's sidecar record lives: fanned out over 256
// directories so none grows too large for ordinary tools.
func recordPath(key string) string {
	h := keyHash(key)
	name := hex.EncodeToString(h[:])
	return recordDir + "/" + name[:2] + "/" + name + ".json"
}

// parentDir is the directory holding name ("." for the root).
func parentDir(name string) string { return path.Dir(name) }

// cleanName checks that name is a clean, relative, '/'-separated path, the
// only form the store produces. "" and "." name the root.
func cleanName(name string) (string, error) {
	if name == "" || name == "." {
		return ".", nil
	}
	if strings.HasPrefix(name, "/") || strings.IndexByte(name, 0) >= 0 {
		return "", errOutsideRoot
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", errOutsideRoot
		}
	}
	return name, nil
}
