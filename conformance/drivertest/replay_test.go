package drivertest

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/driver"
)

const testPS = 512

// page returns a page filled with b.
func page(b byte) []byte { return bytes.Repeat([]byte{b}, testPS) }

// image builds an image from page fill bytes, with a valid header on page 1.
func image(fills ...byte) []byte {
	var img []byte
	for _, f := range fills {
		img = append(img, page(f)...)
	}
	if len(img) >= 100 {
		copy(img, sqliteMagic)
		binary.BigEndian.PutUint16(img[16:18], testPS)
		binary.BigEndian.PutUint32(img[24:28], 7)
		binary.BigEndian.PutUint32(img[92:96], 7)
		binary.BigEndian.PutUint32(img[28:32], uint32(len(fills)))
	}
	return img
}

func commit(count uint32, pages ...driver.Page) driver.CapturedCommit {
	return driver.CapturedCommit{PageSize: testPS, PageCount: count, Pages: pages}
}

func pg(n uint32, fill byte) driver.Page { return driver.Page{Pgno: n, Data: page(fill)} }

func TestApplyCommitGrowsShrinksAndOverwrites(t *testing.T) {
	base := image(1, 2, 3)
	grown := applyCommit(base, commit(5, pg(2, 9), pg(4, 4), pg(5, 5)))
	if len(grown) != 5*testPS {
		t.Fatalf("grown image has %d bytes", len(grown))
	}
	if !bytes.Equal(grown[testPS:2*testPS], page(9)) || !bytes.Equal(grown[3*testPS:], append(page(4), page(5)...)) {
		t.Fatal("pages not written where they belong")
	}
	if !bytes.Equal(base, image(1, 2, 3)) {
		t.Fatal("applyCommit modified its input")
	}
	shrunk := applyCommit(grown, commit(2))
	if !bytes.Equal(shrunk, grown[:2*testPS]) {
		t.Fatal("shrinking did not truncate to the page count")
	}
}

func TestCheckCommitShape(t *testing.T) {
	ok := commit(3, pg(1, 1), pg(3, 3))
	if err := checkCommitShape(ok, testPS); err != nil {
		t.Fatalf("valid commit rejected: %v", err)
	}
	bad := map[string]driver.CapturedCommit{
		"page size":   {PageSize: 1024, PageCount: 3},
		"zero count":  commit(0),
		"pgno zero":   commit(3, pg(0, 1)),
		"descending":  commit(3, pg(2, 1), pg(1, 1)),
		"repeated":    commit(3, pg(2, 1), pg(2, 1)),
		"beyond":      commit(3, pg(4, 1)),
		"short page":  commit(3, driver.Page{Pgno: 1, Data: make([]byte, 100)}),
		"long page":   commit(3, driver.Page{Pgno: 1, Data: make([]byte, testPS+1)}),
		"nil content": commit(3, driver.Page{Pgno: 1}),
	}
	for name, cm := range bad {
		if err := checkCommitShape(cm, testPS); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestVerifyCommits(t *testing.T) {
	base := image(1, 2, 3)
	// Two commits changing page 2 twice, then growing.
	s1 := applyCommit(base, commit(3, pg(2, 20)))
	s2 := applyCommit(s1, commit(4, pg(2, 21), pg(4, 40)))
	good := []driver.CapturedCommit{commit(3, pg(2, 20)), commit(4, pg(2, 21), pg(4, 40))}
	if err := verifyCommits(testPS, base, good, [][]byte{s1, s2}, s2); err != nil {
		t.Fatalf("correct commits rejected: %v", err)
	}
	// A no-op commit (a page listed unchanged) anywhere is fine.
	noop := []driver.CapturedCommit{commit(3, pg(3, 3)), good[0], commit(3, pg(1, 0)), good[1]}
	noop[2].Pages[0].Data = bytes.Clone(s1[:testPS])
	if err := verifyCommits(testPS, base, noop, [][]byte{s1, s2}, s2); err != nil {
		t.Fatalf("no-op commits rejected: %v", err)
	}
	// Lazily read pages: the first commit carries page 2's final content.
	// The final image still matches, the intermediate one does not.
	lazy := []driver.CapturedCommit{commit(3, pg(2, 21)), commit(4, pg(2, 21), pg(4, 40))}
	if err := verifyCommits(testPS, base, lazy, nil, s2); err != nil {
		t.Fatalf("without snapshots lazy pages are invisible, yet: %v", err)
	}
	err := verifyCommits(testPS, base, lazy, [][]byte{s1, s2}, s2)
	if err == nil || !strings.Contains(err.Error(), "operation 1") {
		t.Fatalf("lazy pages not caught by the snapshot: %v", err)
	}
	// A missing page.
	missing := []driver.CapturedCommit{commit(3, pg(2, 20)), commit(4, pg(2, 21))}
	if err := verifyCommits(testPS, base, missing, nil, s2); err == nil || !strings.Contains(err.Error(), "page 4") {
		t.Fatalf("missing new page not caught: %v", err)
	}
	// A snapshot no commit explains (a change nobody reported).
	if err := verifyCommits(testPS, base, nil, [][]byte{s1}, s1); err == nil {
		t.Fatal("an unreported change was accepted")
	}
	// Shrinking must be reported.
	small := base[:2*testPS]
	if err := verifyCommits(testPS, base, nil, nil, small); err == nil {
		t.Fatal("an unreported shrink was accepted")
	}
	if err := verifyCommits(testPS, base, []driver.CapturedCommit{commit(2)}, nil, small); err != nil {
		t.Fatalf("a reported shrink was rejected: %v", err)
	}
}

func TestDescribeDiff(t *testing.T) {
	a, b := image(1, 2, 3), image(1, 2, 3)
	b[2*testPS+7] = 0xee
	if d := describeDiff(a, b); !strings.Contains(d, "page 3 at byte 7") {
		t.Fatalf("describeDiff = %q", d)
	}
	if d := describeDiff(a[:testPS], b); !strings.Contains(d, "1 pages") || !strings.Contains(d, "3 pages") {
		t.Fatalf("describeDiff of different sizes = %q", d)
	}
	if d := describeDiff(a, a); d != "images are equal" {
		t.Fatalf("describeDiff of equal images = %q", d)
	}
}

func TestEqualIgnoringJournalMode(t *testing.T) {
	a := image(1, 2)
	b := withJournalBytes(a, 2)
	binary.BigEndian.PutUint32(b[24:28], 99)
	binary.BigEndian.PutUint32(b[92:96], 99)
	binary.BigEndian.PutUint32(b[96:100], 3054001)
	if !equalIgnoringJournalMode(a, b) {
		t.Fatal("journal-mode bytes and change counter should be ignored")
	}
	b[20]++
	if equalIgnoringJournalMode(a, b) {
		t.Fatal("a difference in another header byte was ignored")
	}
	c := image(1, 2)
	c[testPS+1]++
	if equalIgnoringJournalMode(a, c) {
		t.Fatal("a difference in page 2 was ignored")
	}
	if equalIgnoringJournalMode(a, a[:testPS]) {
		t.Fatal("different sizes compared equal")
	}
}

func TestCheckHeader(t *testing.T) {
	img := image(1, 2, 3)
	if err := checkHeader(img, testPS, 3); err != nil {
		t.Fatalf("valid header rejected: %v", err)
	}
	if err := checkHeader(img, testPS, 4); err == nil {
		t.Fatal("wrong page count accepted")
	}
	if err := checkHeader(img, 1024, 3); err == nil {
		t.Fatal("wrong page size accepted")
	}
	bad := bytes.Clone(img)
	binary.BigEndian.PutUint32(bad[28:32], 9)
	if err := checkHeader(bad, testPS, 3); err == nil {
		t.Fatal("in-header size disagreeing with PageCount accepted")
	}
	binary.BigEndian.PutUint32(bad[92:96], 1) // stale: the in-header size no longer counts
	if err := checkHeader(bad, testPS, 3); err != nil {
		t.Fatalf("stale in-header size should be ignored: %v", err)
	}
	bad[0] = 'X'
	if err := checkHeader(bad, testPS, 3); err == nil {
		t.Fatal("missing magic accepted")
	}
	if err := checkHeader(nil, testPS, 0); err != nil {
		t.Fatalf("empty database rejected: %v", err)
	}
}

func TestFormatRowKeepsClassesApart(t *testing.T) {
	rows := [][]any{{int64(1)}, {1.0}, {"1"}, {[]byte("1")}, {nil}, {""}, {[]byte{}}}
	seen := map[string]bool{}
	for _, r := range rows {
		s := formatRow(r)
		if seen[s] {
			t.Fatalf("%v formats like another value: %q", r, s)
		}
		seen[s] = true
	}
}

func TestDiffDumps(t *testing.T) {
	a := map[string][]string{"t": {"i:1", "i:2"}, "u": nil}
	if d := diffDumps(a, a); d != "" {
		t.Fatalf("equal dumps differ: %s", d)
	}
	for name, b := range map[string]map[string][]string{
		"missing table": {"t": {"i:1", "i:2"}},
		"extra table":   {"t": {"i:1", "i:2"}, "u": nil, "v": nil},
		"missing row":   {"t": {"i:1"}, "u": nil},
		"changed row":   {"t": {"i:1", "i:3"}, "u": nil},
	} {
		if d := diffDumps(b, a); d == "" {
			t.Errorf("%s: no difference reported", name)
		}
	}
}
