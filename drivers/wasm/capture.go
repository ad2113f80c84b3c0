package wasm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cellb/cellb/core/driver"
	"github.com/ncruces/go-sqlite3/vfs"
)

// ErrCaptureLost is returned by TakeCommits once the connection can no
// longer vouch for the pages it reports (the database left rollback-journal
// mode, or reading a committed page failed). It stays until Restore, which
// starts capture afresh from a known image.
var ErrCaptureLost = errors.New("drivers/wasm: page capture lost")

var errWALOpened = errors.New("the database opened a write-ahead log, whose pages bypass the main file")

// recorder turns the writes SQLite makes to one main database file into
// commits.
//
// In rollback-journal mode SQLite changes the main file only while it holds
// the exclusive lock, and it releases that lock as soon as the transaction
// has committed or rolled back; so the changes between the first write and
// the next Unlock are exactly one transaction. At that Unlock, still under
// the lock, the recorder reads the final content of every page the
// transaction touched: that is the commit, copied at commit time. Writes
// made outside SQLite's batch-atomic bracket (journaled commits, the first
// CREATE on an empty file, VACUUM, a transaction too large for the cache)
// are covered the same way, because nothing depends on the bracket.
//
// A transaction can also write pages and then roll back (a cache spill
// followed by ROLLBACK, or a failed commit). Such a transaction is
// recognised by the file change counter in the header, which every commit
// in rollback-journal mode increments and a rollback restores; the only
// commits that leave it alone are those of a file system with real
// batch-atomic writes, which report themselves through CommitAtomicWrite.
// (SQLite's rollback hook cannot serve: it runs after the lock is
// released.) SQLite's rollback restores every page that matters, but not
// the bytes of free pages it never journaled, so the recorder keeps each
// page's content from before the transaction first wrote it and, after a
// rollback, puts back any that still differ: the file is then byte for
// byte what it was, and the rolled-back transaction rightly yields nothing.
//
// The recorder is used only from the goroutine that drives the connection
// (SQLite calls the VFS synchronously), so it needs no lock.
type recorder struct {
	active       bool   // a transaction has changed the file since the last Unlock
	startSize    int64  // file size before the first change
	startCounter uint32 // change counter before the first change
	startPS      int64  // page size before the first change; 0 for an empty file
	batchCommit  bool   // a batch-atomic write committed
	spans        []span // byte ranges written since then

	// Content of the pages that existed before the transaction, as it
	// was before the transaction's first write to each, keyed by page
	// index (page number - 1); the bytes live in slab.
	before map[int64][]byte
	slab   []byte

	// wal: the database runs in WAL mode, and commits come from the log.
	wal bool
	log walState

	store   pendingStore
	scratch []uint32 // page numbers of the commit being read
	err     error
}

type span struct{ off, end int64 }

// beforeChange starts a transaction's record at its first change.
func (r *recorder) beforeChange(f vfs.File) {
	if r.active {
		return
	}
	r.active = true
	r.spans = r.spans[:0]
	r.batchCommit = false
	r.startPS = 0
	clear(r.before)
	r.slab = r.slab[:0]
	size, err := f.Size()
	if err != nil {
		r.fail(fmt.Errorf("reading the database size: %w", err))
		return
	}
	r.startSize = size
	if size < headerSize {
		return
	}
	var hdr [headerSize]byte
	if err := readAt(f, hdr[:], 0); err != nil {
		r.fail(fmt.Errorf("reading the database header: %w", err))
		return
	}
	h, err := parseHeader(hdr[:])
	if err != nil {
		r.fail(err)
		return
	}
	r.startCounter = binary.BigEndian.Uint32(hdr[offChangeCounter:])
	r.startPS = int64(h.pageSize)
}

// beforeWrite records the transaction's first change and keeps the
// original content of the existing pages about to change in [off, end).
func (r *recorder) beforeWrite(f vfs.File, off, end int64) {
	r.beforeChange(f)
	if r.startPS == 0 || r.err != nil {
		return
	}
	end = min(end, r.startSize)
	for p := off / r.startPS; p*r.startPS < end; p++ {
		if _, ok := r.before[p]; ok {
			continue
		}
		n := min(r.startPS, r.startSize-p*r.startPS)
		at := len(r.slab)
		r.slab = append(r.slab, make([]byte, n)...)
		if err := readAt(f, r.slab[at:], p*r.startPS); err != nil {
			r.fail(fmt.Errorf("reading page %d before its first write: %w", p+1, err))
			return
		}
		if r.before == nil {
			r.before = map[int64][]byte{}
		}
		// If the slab moves as it grows, earlier pages keep the old
		// array alive; their bytes stay right.
		r.before[p] = r.slab[at : at+int(n) : at+int(n)]
	}
}

func (r *recorder) wrote(off, n int64) {
	if n <= 0 {
		return
	}
	if k := len(r.spans); k > 0 && r.spans[k-1].end == off {
		r.spans[k-1].end = off + n // sequential writes: one span
		return
	}
	r.spans = append(r.spans, span{off, off + n})
}

func (r *recorder) batchCommitted() {
	if r.active {
		r.batchCommit = true
	}
}

// abandon forgets an unfinished transaction (the file is being closed;
// SQLite has rolled it back).
func (r *recorder) abandon() {
	r.active = false
	r.spans = r.spans[:0]
	clear(r.before)
	r.slab = r.slab[:0]
}

func (r *recorder) fail(err error) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %w", ErrCaptureLost, err)
	}
}

// reset forgets everything, as after Restore.
func (r *recorder) reset() {
	r.abandon()
	r.log.reset()
	r.store.reset()
	r.err = nil
}

// take hands over the finished commits.
func (r *recorder) take() ([]driver.CapturedCommit, error) {
	if r.err != nil {
		return nil, r.err
	}
	return r.store.take(), nil
}

// finish closes the transaction's record when SQLite drops its lock, while
// the file still holds exactly what the transaction committed.
func (r *recorder) finish(f vfs.File) {
	if !r.active {
		return
	}
	defer r.abandon()
	if r.err != nil {
		return
	}
	if r.startPS == 0 {
		// The file had no database yet. If it has none still, the
		// transaction rolled back (SQLite truncated the file again).
		size, err := f.Size()
		if err != nil {
			r.fail(fmt.Errorf("reading the database size: %w", err))
			return
		}
		if size == r.startSize {
			return
		}
	}
	counter, size, err := r.readCommit(f)
	if err != nil {
		r.fail(err)
		return
	}
	committed := r.batchCommit || r.startPS == 0 || counter != r.startCounter || size != r.startSize
	if committed {
		return
	}
	r.store.drop()
	if err := r.undoFreePages(f); err != nil {
		r.fail(err)
	}
}

// undoFreePages runs after a rollback: it writes back the original bytes
// of pages SQLite did not restore (free pages, whose content SQLite does
// not journal). Their content means nothing to SQLite, so no journal
// protects these writes.
func (r *recorder) undoFreePages(f vfs.File) error {
	var cur []byte
	for p, old := range r.before {
		cur = append(cur[:0], make([]byte, len(old))...)
		if err := readAt(f, cur, p*r.startPS); err != nil {
			return fmt.Errorf("reading page %d after a rollback: %w", p+1, err)
		}
		if !bytes.Equal(cur, old) {
			if _, err := f.WriteAt(old, p*r.startPS); err != nil {
				return fmt.Errorf("restoring free page %d after a rollback: %w", p+1, err)
			}
		}
	}
	return nil
}

// readCommit adds to the store, as a commit, the pages the transaction
// wrote (its spans) plus every page the database grew by since it was
// startSize bytes long, read from the file the caller holds exclusively.
// It returns the header's change counter and the database size in bytes.
func (r *recorder) readCommit(f vfs.File) (counter uint32, size int64, _ error) {
	fileSize, err := f.Size()
	if err != nil {
		return 0, 0, fmt.Errorf("reading the database size: %w", err)
	}
	if fileSize == 0 {
		return 0, 0, fmt.Errorf("the database file is empty after a commit")
	}
	var hdr [headerSize]byte
	if err := readAt(f, hdr[:], 0); err != nil {
		return 0, 0, fmt.Errorf("reading the database header: %w", err)
	}
	h, err := parseHeader(hdr[:])
	if err != nil {
		return 0, 0, err
	}
	ps := int64(h.pageSize)
	count := h.pageCount(fileSize)
	if int64(count)*ps > fileSize {
		return 0, 0, fmt.Errorf("the header counts %d pages but the file holds %d bytes", count, fileSize)
	}

	pgnos := r.scratch[:0]
	for _, s := range r.spans {
		first := s.off/ps + 1
		last := min((s.end-1)/ps+1, int64(count))
		for p := first; p <= last; p++ {
			pgnos = append(pgnos, uint32(p))
		}
	}
	for p := r.startSize/ps + 1; p <= int64(count); p++ {
		pgnos = append(pgnos, uint32(p))
	}
	slices.Sort(pgnos)
	pgnos = slices.Compact(pgnos)
	r.scratch = pgnos

	r.store.begin(int(ps), count)
	for i := 0; i < len(pgnos); {
		// Read each run of consecutive pages at once, into the store.
		j := i + 1
		for j < len(pgnos) && pgnos[j] == pgnos[j-1]+1 {
			j++
		}
		at := len(r.store.data)
		for k := i; k < j; k++ {
			r.store.room(pgnos[k])
		}
		if err := readAt(f, r.store.data[at:], int64(pgnos[i]-1)*ps); err != nil {
			r.store.drop()
			return 0, 0, fmt.Errorf("reading pages %d-%d: %w", pgnos[i], pgnos[j-1], err)
		}
		i = j
	}
	return binary.BigEndian.Uint32(hdr[offChangeCounter:]), int64(count) * ps, nil
}

// readChunk bounds single reads: memdb cannot read across its 64 KiB
// sectors, and the operating system gains nothing from larger reads here.
const readChunk = 64 << 10

// readAt fills p from f at off, in pieces that never cross a 64 KiB
// boundary.
func readAt(f vfs.File, p []byte, off int64) error {
	for len(p) > 0 {
		n := min(int64(len(p)), readChunk-off%readChunk)
		got, err := f.ReadAt(p[:n], off)
		if int64(got) != n {
			if err == nil {
				err = fmt.Errorf("short read: %d of %d bytes at offset %d", got, n, off)
			}
			return err
		}
		p, off = p[n:], off+n
	}
	return nil
}
