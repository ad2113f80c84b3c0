package drivertest

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cellb/cellb/core/driver"
)

// This file holds the pure image logic the capture cases rely on: replaying
// captured commits, checking their shape, and describing differences.

// applyCommit returns a new image: img resized to the commit's page count
// (dropping pages beyond it, or adding zeroed pages the commit must then
// list) with the commit's pages written over it.
func applyCommit(img []byte, cm driver.CapturedCommit) []byte {
	out := make([]byte, int(cm.PageCount)*cm.PageSize)
	copy(out, img)
	for _, p := range cm.Pages {
		off := int(p.Pgno-1) * cm.PageSize
		if p.Pgno == 0 || off+len(p.Data) > len(out) {
			continue // checkCommitShape reports it
		}
		copy(out[off:], p.Data)
	}
	return out
}

// maxImageBytes bounds the images the suite replays: its databases stay
// far smaller, and a corrupt PageCount must not make it allocate wildly.
const maxImageBytes = 1 << 30

// checkCommitShape checks the structural promises of one commit: its page
// size is the database's, and its pages are ascending, full-size and within
// the page count.
func checkCommitShape(cm driver.CapturedCommit, pageSize int) error {
	if cm.PageSize != pageSize {
		return fmt.Errorf("PageSize %d, but the database's page size is %d", cm.PageSize, pageSize)
	}
	if cm.PageCount == 0 {
		return fmt.Errorf("PageCount 0: a committed database has at least one page")
	}
	if int64(cm.PageCount)*int64(pageSize) > maxImageBytes {
		return fmt.Errorf("PageCount %d: more than the suite's databases ever hold (%d bytes)", cm.PageCount, int64(maxImageBytes))
	}
	var prev uint32
	for i, p := range cm.Pages {
		switch {
		case p.Pgno == 0:
			return fmt.Errorf("page %d of the commit has Pgno 0 (pages are numbered from 1)", i)
		case p.Pgno <= prev:
			return fmt.Errorf("pages out of order or repeated: Pgno %d after %d", p.Pgno, prev)
		case p.Pgno > cm.PageCount:
			return fmt.Errorf("Pgno %d beyond the commit's PageCount %d", p.Pgno, cm.PageCount)
		case len(p.Data) != pageSize:
			return fmt.Errorf("page %d has %d bytes, want the page size %d", p.Pgno, len(p.Data), pageSize)
		}
		prev = p.Pgno
	}
	return nil
}

// replayError explains why commits failed to reproduce an image.
type replayError struct {
	what string
}

func (e *replayError) Error() string { return e.what }

// verifyCommits checks the central capture claim. Starting from base (the
// image as of the previous TakeCommits), replaying commits in order must
// pass through every image in snaps (serialized after successive committing
// operations, in order) and end exactly at final. Operations that changed
// nothing may have produced no commit, so each snapshot is matched by the
// shortest prefix of the remaining commits that reproduces it.
func verifyCommits(pageSize int, base []byte, commits []driver.CapturedCommit, snaps [][]byte, final []byte) error {
	for i, cm := range commits {
		if err := checkCommitShape(cm, pageSize); err != nil {
			return &replayError{fmt.Sprintf("commit %d of %d: %v", i+1, len(commits), err)}
		}
	}
	img := base
	j := 0
	for i, want := range snaps {
		from, fromImg := j, img
		for !bytes.Equal(img, want) {
			if j == len(commits) {
				k, diff := closestPrefix(fromImg, commits[from:], want)
				return &replayError{fmt.Sprintf(
					"replaying the %d captured commits never reproduces the image serialized after committing operation %d of the step (closest after commit %d: %s); pages were not copied at commit time, or a change is missing",
					len(commits), i+1, from+k, diff)}
			}
			img = applyCommit(img, commits[j])
			j++
		}
	}
	for ; j < len(commits); j++ {
		img = applyCommit(img, commits[j])
	}
	if !bytes.Equal(img, final) {
		return &replayError{fmt.Sprintf(
			"replaying the %d captured commits onto the previous image does not give Serialize(): %s",
			len(commits), describeDiff(img, final))}
	}
	return nil
}

// closestPrefix finds how many of commits, replayed onto img, come closest
// to want (fewest differing pages), for error messages.
func closestPrefix(img []byte, commits []driver.CapturedCommit, want []byte) (int, string) {
	best, bestN := -1, 0
	bestDiff := ""
	for k := 0; ; k++ {
		if n := differingPages(img, want); best < 0 || n < bestN {
			best, bestN, bestDiff = k, n, describeDiff(img, want)
		}
		if k == len(commits) {
			return best, bestDiff
		}
		img = applyCommit(img, commits[k])
	}
}

// differingPages counts pages that differ, a missing page counting as one.
func differingPages(a, b []byte) int {
	ps := max(pageSizeOf(a), pageSizeOf(b), 512)
	n := 0
	for off := 0; off < max(len(a), len(b)); off += ps {
		if off >= len(a) || off >= len(b) || !bytes.Equal(a[off:min(off+ps, len(a))], b[off:min(off+ps, len(b))]) {
			n++
		}
	}
	return n
}

// describeDiff says where two images first differ, in pages.
func describeDiff(got, want []byte) string {
	ps := pageSizeOf(want)
	if ps == 0 {
		ps = pageSizeOf(got)
	}
	if ps == 0 {
		ps = 4096
	}
	n := min(len(got), len(want))
	for i := 0; i < n; i++ {
		if got[i] != want[i] {
			pages := 0
			for p := i / ps; p*ps < n; p++ {
				end := min((p+1)*ps, n)
				if !bytes.Equal(got[p*ps:end], want[p*ps:end]) {
					pages++
				}
			}
			s := fmt.Sprintf("first difference in page %d at byte %d of the page (got %#02x, want %#02x); %d of the common pages differ",
				i/ps+1, i%ps, got[i], want[i], pages)
			if len(got) != len(want) {
				s += fmt.Sprintf("; sizes %d and %d bytes", len(got), len(want))
			}
			return s
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("replayed image has %d bytes (%d pages), Serialize has %d bytes (%d pages); the common part is equal",
			len(got), len(got)/ps, len(want), len(want)/ps)
	}
	return "images are equal"
}

// pageSizeOf reads the page size from a database header, 0 if there is none.
func pageSizeOf(img []byte) int {
	if len(img) < 100 || !bytes.HasPrefix(img, []byte(sqliteMagic)) {
		return 0
	}
	ps := int(binary.BigEndian.Uint16(img[16:18]))
	if ps == 1 {
		return 65536
	}
	return ps
}

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// Header offsets a journal-mode switch may legitimately rewrite: the
// read/write format versions (1 rollback, 2 WAL), and what SQLite writes
// with every change-counter update: the counter, its version-valid-for
// copy and the writing library's version number (zero in an image that
// never had a counter update, such as an in-memory database's).
var journalHeaderBytes = []int{18, 19, 24, 25, 26, 27, 92, 93, 94, 95, 96, 97, 98, 99}

// equalIgnoringJournalMode compares two images that may differ only in the
// header bytes a journal-mode switch rewrites.
func equalIgnoringJournalMode(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) < 100 {
		return bytes.Equal(a, b)
	}
	a2, b2 := bytes.Clone(a[:100]), bytes.Clone(b[:100])
	for _, off := range journalHeaderBytes {
		a2[off], b2[off] = 0, 0
	}
	return bytes.Equal(a2, b2) && bytes.Equal(a[100:], b[100:])
}

// withJournalBytes returns a copy of img claiming the given journal format
// in header bytes 18 and 19 (1 rollback journal, 2 WAL).
func withJournalBytes(img []byte, v byte) []byte {
	out := bytes.Clone(img)
	if len(out) >= 20 {
		out[18], out[19] = v, v
	}
	return out
}

// checkHeader checks that img is a plausible database image of pageCount
// pages of pageSize bytes.
func checkHeader(img []byte, pageSize int, pageCount int64) error {
	if int64(len(img)) != int64(pageSize)*pageCount {
		return fmt.Errorf("image has %d bytes, but PageSize*PageCount = %d*%d = %d", len(img), pageSize, pageCount, int64(pageSize)*pageCount)
	}
	if len(img) == 0 {
		return nil
	}
	if !bytes.HasPrefix(img, []byte(sqliteMagic)) {
		return fmt.Errorf("image does not start with the SQLite header string")
	}
	if got := pageSizeOf(img); got != pageSize {
		return fmt.Errorf("header page size %d, PageSize() %d", got, pageSize)
	}
	// The in-header size is authoritative only when the change counter
	// and its version-valid-for copy agree.
	if bytes.Equal(img[24:28], img[92:96]) {
		if n := binary.BigEndian.Uint32(img[28:32]); int64(n) != pageCount {
			return fmt.Errorf("header says %d pages (bytes 28..31), PageCount() says %d", n, pageCount)
		}
	}
	return nil
}
