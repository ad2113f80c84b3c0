package ltxlog

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"os"
	"slices"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// Compaction keeps an epoch's chain short without rewriting the database
// for every few commits. The chain is:
//
//   - its full file, from TXID 1: the epoch's level-0 snapshot until the
//     first full merge, then a level-1 file 0001/<1>-<n>.ltx;
//   - level-1 range files after it, 0001/<a>-<b>.ltx, contiguous, each the
//     merge of a run of level-0 files (or of earlier range files and a run
//     of level-0 files), as celld's compactor writes them: block pages,
//     NoChecksum, MinTXID from the first input, MaxTXID, Commit and
//     Timestamp from the last, the newest input's page wins;
//   - the level-0 files not compacted yet.
//
// A normal compaction (a range merge) reads only the level-0 run (and the
// range files it absorbs) and writes the pages they changed: its cost
// follows what changed, not the database's size. A full merge rewrites the
// chain as one file from TXID 1, and happens only when the range files,
// with the run being compacted, add up to Options.FullMergePercent of the
// full file's size: a restore then reads at most the full file, range
// files smaller than it together (at the default 100 %), and the level-0
// tail; and each full merge's cost (about the database's size) is paid for
// by at least as many bytes of range files, so the bytes compaction writes
// per byte of level-0 files stay a small constant. Range files of about the
// same weight (level-0 files merged) are merged together once
// Options.RangeFanout of them gather, so their number stays logarithmic in
// the commits since the full file. docs/decisions.md has the arithmetic.

// l1Chain is what compaction made of the epoch's chain, under cellLog.mu
// and changed only by the compactor.
type l1Chain struct {
	// full starts the chain at TXID 1; nil until the first compaction
	// takes the epoch's snapshot (the first level-0 file) as its start.
	full *ltx.FileInfo
	// fullCommit is full's database size in pages (0: not read yet).
	fullCommit uint32
	ranges     []rangeFile
}

// rangeFile is a level-1 file after the full one.
type rangeFile struct {
	ltx.FileInfo
	commit uint32 // its header's database size in pages
	weight int    // how many level-0 files it merges
	ts     int64  // its header's timestamp (its last commit's, Unix ms)
}

// compact runs one compaction of this epoch's chain: a range merge of the
// level-0 files listed when it starts, or a full merge when the rule above
// calls for one. It uploads the new file and only then deletes the files
// it replaces: at every moment the bucket holds a complete chain. It runs
// on the compactor's goroutine while uploads go on (uploads only add
// level-0 files after the ones it merges, never change or delete one), and
// a restore that lists a file this deletes before reading it starts again
// from a fresh listing.
func (c *cellLog) compact(ctx context.Context) error {
	c.mu.Lock()
	if c.chain.full == nil && len(c.l0Files) > 0 && c.l0Files[0].MinTXID == 1 {
		// The epoch's snapshot is a full file already: it starts the
		// chain, and the first compaction does not rewrite it.
		f := c.l0Files[0]
		c.chain.full = &f
		c.l0Files = slices.Clone(c.l0Files[1:])
	}
	var full *ltx.FileInfo
	if c.chain.full != nil {
		f := *c.chain.full
		full = &f
	}
	fullCommit := c.chain.fullCommit
	ranges := slices.Clone(c.chain.ranges)
	l0 := slices.Clone(c.l0Files)
	c.mu.Unlock()
	if len(l0) == 0 {
		return nil
	}
	if full == nil || (!c.retaining() && c.fullMergeDue(full, ranges, l0)) {
		return c.compactFull(ctx, full, ranges, l0)
	}
	if fullCommit == 0 {
		// Once per epoch: the snapshot's size in pages, from its header.
		h, err := readHeader(ctx, c.opts.Store, full.Key)
		if err != nil {
			return fmt.Errorf("read the header of %s: %w", full.Key, err)
		}
		fullCommit = h.Commit
		c.mu.Lock()
		c.chain.fullCommit = fullCommit
		c.mu.Unlock()
	}
	if c.retaining() {
		return c.compactLadder(ctx, full, fullCommit, ranges, l0)
	}
	return c.compactRange(ctx, full, fullCommit, ranges, l0)
}

// fullMergeDue applies the full-merge rule: the range files and the
// level-0 run add up to FullMergePercent of the full file (negative: every
// compaction is a full merge).
func (c *cellLog) fullMergeDue(full *ltx.FileInfo, ranges []rangeFile, l0 []ltx.FileInfo) bool {
	if c.opts.FullMergePercent < 0 {
		return true
	}
	var sum int64
	for _, r := range ranges {
		sum += r.Size
	}
	for _, f := range l0 {
		sum += f.Size
	}
	return sum*100 >= int64(c.opts.FullMergePercent)*full.Size
}

// absorbFrom returns the index of the first range file the next range
// merge (of a run of w level-0 files) takes in: while RangeFanout-1 or
// more range files at the chain's end weigh no more than the merge so
// far, they join it — a binary counter in base RangeFanout, so a level-0
// file is rewritten at most once per power of RangeFanout.
func (c *cellLog) absorbFrom(ranges []rangeFile, w int) int {
	k := len(ranges)
	fanout := c.opts.RangeFanout
	if fanout < 2 {
		return k
	}
	for {
		j := k
		for j > 0 && ranges[j-1].weight <= w {
			j--
		}
		if k-j < fanout-1 {
			return k
		}
		for _, r := range ranges[j:k] {
			w += r.weight
		}
		k = j
	}
}

// compactRange merges the level-0 run l0 (with the range files at the
// chain's end that absorbFrom picks) into one level-1 range file. The
// pages are decoded as they download into a pageSpool: its disk space
// follows the pages the inputs hold, its memory is one bit per page.
func (c *cellLog) compactRange(ctx context.Context, full *ltx.FileInfo, fullCommit uint32, ranges []rangeFile, l0 []ltx.FileInfo) error {
	k := c.absorbFrom(ranges, len(l0))
	weight := len(l0)
	prevCommit, prevMax := fullCommit, full.MaxTXID
	if k > 0 {
		prevCommit, prevMax = ranges[k-1].commit, ranges[k-1].MaxTXID
	}
	var inputs []ltx.FileInfo
	for _, r := range ranges[k:] {
		inputs = append(inputs, r.FileInfo)
		weight += r.weight
	}
	inputs = append(inputs, l0...)
	nr, n, err := c.mergeRange(ctx, prevCommit, prevMax, inputs)
	if err != nil {
		return err
	}
	nr.weight = weight
	c.mu.Lock()
	c.chain.ranges = append(c.chain.ranges[:k:k], nr)
	c.dropCompactedL0(nr.MaxTXID)
	c.mu.Unlock()
	c.deleteReplaced(ctx, inputs, nr.Key)
	c.log.Debug("compacted LTX run", "key", nr.Key, "inputs", len(inputs), "pages", n, "bytes", nr.Size)
	return nil
}

// mergeRange merges inputs, which continue TXID prevMax of a chain whose
// database then had prevCommit pages, into one level-1 range file and
// uploads it; n is how many pages it holds. It deletes nothing.
func (c *cellLog) mergeRange(ctx context.Context, prevCommit uint32, prevMax ltx.TXID, inputs []ltx.FileInfo) (nr rangeFile, n int, err error) {
	ps, err := newPageSpool(c.opts.SpoolDir)
	if err != nil {
		return rangeFile{}, 0, err
	}
	defer ps.close()
	dec := ltx.NewPageDecoder()
	// low is the smallest database size the chain passed through from
	// before the run to its end: a page above it was dropped at some
	// point, and the run must write it again (the chain restores only if
	// it does).
	low := prevCommit
	var first, last ltx.Header
	for i, fi := range inputs {
		check := func(h ltx.Header) error {
			after, pageSize := prevMax, h.PageSize
			if i > 0 {
				after, pageSize = last.MaxTXID, first.PageSize
			}
			switch {
			case h.MinTXID != fi.MinTXID || h.MaxTXID != fi.MaxTXID:
				return fmt.Errorf("ltxlog: %s holds TXIDs %d-%d", fi.Key, h.MinTXID, h.MaxTXID)
			case h.MinTXID != after+1 || h.PageSize != pageSize:
				return fmt.Errorf("ltxlog: %s does not continue TXID %d with page size %d", fi.Key, after, pageSize)
			}
			if i == 0 {
				ps.setPageSize(h.PageSize)
			}
			// A file first sets the database's size: pages past it go
			// (restore's rule, ltx.Image).
			ps.truncate(h.Commit)
			low = min(low, h.Commit)
			return nil
		}
		r, err := store.NewReader(ctx, c.opts.Store, fi.Key)
		if err != nil {
			return rangeFile{}, 0, err
		}
		h, err := dec.DecodeFrom(r, check, ps.put)
		r.Close()
		if err != nil {
			return rangeFile{}, 0, fmt.Errorf("read %s: %w", fi.Key, err)
		}
		if i == 0 {
			first = h
		}
		last = h
	}
	lock := ltx.LockPgno(last.PageSize)
	for pgno := low + 1; pgno <= last.Commit; pgno++ {
		if pgno != lock && !ps.has(pgno) {
			return rangeFile{}, 0, fmt.Errorf("ltxlog: TXIDs %d-%d drop page %d and never write it again", first.MinTXID, last.MaxTXID, pgno)
		}
	}
	nextPgno := ps.pages()
	buf := make([]byte, last.PageSize)
	next := func() (driver.Page, bool, error) {
		pgno := nextPgno()
		if pgno == 0 {
			return driver.Page{}, false, nil
		}
		n++
		if err := ps.read(pgno, buf); err != nil {
			return driver.Page{}, false, err
		}
		return driver.Page{Pgno: pgno, Data: buf}, true, nil
	}
	h := ltx.Header{PageSize: last.PageSize, Commit: last.Commit, MinTXID: first.MinTXID, MaxTXID: last.MaxTXID, Timestamp: last.Timestamp}
	key := ltx.Key(c.cell, c.epoch, 1, h.MinTXID, h.MaxTXID)
	written, err := c.putEncoded(ctx, key, h, next)
	if err != nil {
		return rangeFile{}, 0, err
	}
	nr = rangeFile{
		FileInfo: ltx.FileInfo{Key: key, Cell: c.cell, Epoch: c.epoch, Level: 1, MinTXID: h.MinTXID, MaxTXID: h.MaxTXID, Size: written.Size},
		commit:   h.Commit, ts: h.Timestamp,
	}
	return nr, n, nil
}

// compactFull merges the whole chain into one level-1 file from TXID 1.
// The merged image is built in an unlinked temporary file and encoded from
// it while it uploads: nothing image-sized is held in memory.
func (c *cellLog) compactFull(ctx context.Context, full *ltx.FileInfo, ranges []rangeFile, l0 []ltx.FileInfo) error {
	var inputs []ltx.FileInfo
	if full != nil {
		inputs = append(inputs, *full)
	}
	for _, r := range ranges {
		inputs = append(inputs, r.FileInfo)
	}
	inputs = append(inputs, l0...)
	plan, err := ltx.Plan(inputs)
	if err != nil {
		return fmt.Errorf("plan compaction: %w", err)
	}
	f, err := os.CreateTemp(c.opts.SpoolDir, "cellb-ltx-compact-*")
	if err != nil {
		return err
	}
	os.Remove(f.Name())
	defer f.Close()
	co := newCoalescer(f)
	defer co.close()
	im := ltx.NewImageTo(co)
	var last ltx.Header
	for _, fi := range plan {
		r, err := store.NewReader(ctx, c.opts.Store, fi.Key)
		if err != nil {
			return err
		}
		h, err := im.ApplyFrom(r)
		r.Close()
		if err != nil {
			return err
		}
		last = h
	}
	if err := im.Finish(); err != nil {
		return err
	}
	if err := co.close(); err != nil {
		return err
	}
	ps := int64(last.PageSize)
	lock := ltx.LockPgno(last.PageSize)
	h := ltx.Header{PageSize: last.PageSize, Commit: last.Commit, MinTXID: 1, MaxTXID: last.MaxTXID, Timestamp: last.Timestamp}
	buf := make([]byte, ps)
	var pgno uint32
	next := func() (driver.Page, bool, error) {
		pgno++
		if pgno == lock {
			pgno++
		}
		if pgno > last.Commit {
			return driver.Page{}, false, nil
		}
		if _, err := f.ReadAt(buf, int64(pgno-1)*ps); err != nil {
			return driver.Page{}, false, err
		}
		return driver.Page{Pgno: pgno, Data: buf}, true, nil
	}
	key := ltx.Key(c.cell, c.epoch, 1, 1, last.MaxTXID)
	written, err := c.putEncoded(ctx, key, h, next)
	if err != nil {
		return err
	}
	nf := ltx.FileInfo{Key: key, Cell: c.cell, Epoch: c.epoch, Level: 1, MinTXID: 1, MaxTXID: last.MaxTXID, Size: written.Size}
	// The new file covers every input; from now on the chain starts with
	// it, and level-0 files uploaded meanwhile stay after it.
	c.mu.Lock()
	c.chain = l1Chain{full: &nf, fullCommit: last.Commit}
	c.dropCompactedL0(last.MaxTXID)
	if c.retaining() {
		if len(c.ret.eras) == 0 {
			c.ret.start = last.Timestamp
		}
		c.newEraLocked(nf, last.Timestamp)
	}
	c.mu.Unlock()
	if !c.retaining() {
		// With a retention window the inputs stay until they age out
		// (retain.go).
		c.deleteReplaced(ctx, inputs, key)
	}
	c.log.Debug("compacted LTX chain", "key", key, "inputs", len(plan), "bytes", written.Size)
	return nil
}

// dropCompactedL0 forgets the level-0 files a new file covers (under mu).
func (c *cellLog) dropCompactedL0(max ltx.TXID) {
	var kept []ltx.FileInfo
	for _, f := range c.l0Files {
		if f.MaxTXID > max {
			kept = append(kept, f)
		}
	}
	c.l0Files = kept
}

// putEncoded encodes h and the pages next yields into key while it
// uploads.
func (c *cellLog) putEncoded(ctx context.Context, key string, h ltx.Header, next func() (driver.Page, bool, error)) (ltx.Written, error) {
	pr, pw := io.Pipe()
	var written ltx.Written
	done := make(chan struct{})
	go func() {
		defer close(done)
		w, err := ltx.EncodeTo(pw, h, next)
		written = w
		pw.CloseWithError(err)
	}()
	md := map[string]string{ltx.MetadataTimestamp: ltx.FormatTimestamp(h.Timestamp)}
	_, err := store.PutFrom(ctx, c.opts.Store, key, pr, -1, store.PutOptions{Metadata: md})
	pr.CloseWithError(errBodyClosed)
	<-done
	return written, err
}

// deleteReplaced deletes the inputs a stored file (key) replaced.
func (c *cellLog) deleteReplaced(ctx context.Context, inputs []ltx.FileInfo, key string) {
	for _, f := range inputs {
		if f.Key == key {
			continue
		}
		if err := c.opts.Store.Delete(ctx, f.Key); err != nil {
			if ctx.Err() != nil {
				return // closing: left-over files are harmless
			}
			// Left-over files are harmless: the planner prefers the
			// file that covers them.
			c.log.Warn("could not delete a compacted LTX file", "key", f.Key, "err", err)
		}
	}
}

// readHeader reads the header of an LTX file in the bucket (its first
// HeaderSize bytes).
func readHeader(ctx context.Context, s store.Store, key string) (ltx.Header, error) {
	r, err := store.NewRangeReader(ctx, s, key, 0, ltx.HeaderSize)
	if err != nil {
		return ltx.Header{}, err
	}
	defer r.Close()
	hb := make([]byte, ltx.HeaderSize)
	if _, err := io.ReadFull(r, hb); err != nil {
		return ltx.Header{}, err
	}
	return ltx.DecodeHeader(hb)
}

// pageSpool holds a range merge's pages in an unlinked temporary file, each
// at its place in the database (a later copy overwrites an earlier one), so
// the file takes the disk space of the pages written, and the only index is
// one bit per page, in chunks of 65,536 pages allocated as pages arrive (a
// database of 10 GiB in 4 KiB pages: 320 KiB at most). A page is one
// write: a range merge's pages are few next to a restore's, and buffers
// sized for the large runs would be most of a small run's memory.
type pageSpool struct {
	f      *os.File
	ps     int64
	chunks map[uint32]*[spoolChunkWords]uint64
	top    uint32 // no page above it is present
}

const (
	spoolChunkPages = 1 << 16
	spoolChunkWords = spoolChunkPages / 64
)

func newPageSpool(dir string) (*pageSpool, error) {
	f, err := os.CreateTemp(dir, "cellb-ltx-merge-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return &pageSpool{f: f, chunks: map[uint32]*[spoolChunkWords]uint64{}}, nil
}

// setPageSize is called with the first input's header, before any page.
func (s *pageSpool) setPageSize(ps uint32) { s.ps = int64(ps) }

func (s *pageSpool) put(pgno uint32, data []byte) error {
	if _, err := s.f.WriteAt(data, int64(pgno-1)*s.ps); err != nil {
		return err
	}
	i := pgno - 1
	c := s.chunks[i/spoolChunkPages]
	if c == nil {
		c = new([spoolChunkWords]uint64)
		s.chunks[i/spoolChunkPages] = c
	}
	o := i % spoolChunkPages
	c[o/64] |= 1 << (o % 64)
	s.top = max(s.top, pgno)
	return nil
}

// truncate drops the pages past commit.
func (s *pageSpool) truncate(commit uint32) {
	if commit >= s.top {
		return
	}
	for k, c := range s.chunks {
		first := k * spoolChunkPages // page number first+1 is the chunk's first
		switch {
		case first >= commit:
			delete(s.chunks, k)
		case commit-first < spoolChunkPages:
			keep := commit - first // pages first+1..commit stay: bits 0..keep-1
			c[keep/64] &= 1<<(keep%64) - 1
			clear(c[keep/64+1:])
		}
	}
	s.top = commit
}

func (s *pageSpool) has(pgno uint32) bool {
	i := pgno - 1
	c := s.chunks[i/spoolChunkPages]
	if c == nil {
		return false
	}
	o := i % spoolChunkPages
	return c[o/64]&(1<<(o%64)) != 0
}

// pages returns an iterator over the present page numbers in ascending
// order (0 after the last).
func (s *pageSpool) pages() func() uint32 {
	keys := make([]uint32, 0, len(s.chunks))
	for k := range s.chunks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ki, o := 0, uint32(0)
	return func() uint32 {
		for ki < len(keys) {
			c := s.chunks[keys[ki]]
			for o < spoolChunkPages {
				w := c[o/64] >> (o % 64)
				if w == 0 {
					o = (o/64 + 1) * 64
					continue
				}
				o += uint32(bits.TrailingZeros64(w))
				pgno := keys[ki]*spoolChunkPages + o + 1
				o++
				return pgno
			}
			ki, o = ki+1, 0
		}
		return 0
	}
}

func (s *pageSpool) read(pgno uint32, buf []byte) error {
	_, err := s.f.ReadAt(buf, int64(pgno-1)*s.ps)
	return err
}

func (s *pageSpool) close() { s.f.Close() }
