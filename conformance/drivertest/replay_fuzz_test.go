package drivertest

import (
	"bytes"
	"testing"

	"github.com/cellb/cellb/core/driver"
)

// commitsFromBytes turns fuzz input into commits of small databases:
// each commit is a page count (1..16), a page bitmap, and fill bytes.
func commitsFromBytes(data []byte) []driver.CapturedCommit {
	var out []driver.CapturedCommit
	for len(data) >= 3 {
		count := uint32(data[0]%16) + 1
		mask := uint16(data[1]) | uint16(data[2])<<8
		data = data[3:]
		cm := driver.CapturedCommit{PageSize: testPS, PageCount: count}
		for p := uint32(1); p <= count; p++ {
			if mask&(1<<(p-1)) == 0 {
				continue
			}
			fill := byte(p)
			if len(data) > 0 {
				fill, data = data[0], data[1:]
			}
			cm.Pages = append(cm.Pages, pg(p, fill))
		}
		out = append(out, cm)
	}
	return out
}

// FuzzVerifyCommits checks the replay check against itself: commits that
// really produced each snapshot always pass, and corrupting one written
// page that survives to the end is always caught.
func FuzzVerifyCommits(f *testing.F) {
	f.Add([]byte{2, 0xff, 0xff, 9, 9, 3, 0x04, 0, 7})
	f.Add([]byte{15, 0xff, 0xff, 0, 1, 2, 3, 0, 0x01, 0, 5})
	f.Add([]byte{0, 1, 0, 4, 4, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		base := image(1, 2, 3)
		commits := commitsFromBytes(data)
		snaps := make([][]byte, 0, len(commits))
		img := base
		for _, cm := range commits {
			img = applyCommit(img, cm)
			snaps = append(snaps, img)
		}
		if err := verifyCommits(testPS, base, commits, snaps, img); err != nil {
			t.Fatalf("genuine commits rejected: %v", err)
		}
		// Corrupt the last commit's last page; unless it equals what was
		// there anyway, the final image check must notice.
		if len(commits) == 0 || len(commits[len(commits)-1].Pages) == 0 {
			return
		}
		last := commits[len(commits)-1]
		p := last.Pages[len(last.Pages)-1]
		bad := bytes.Clone(p.Data)
		bad[len(bad)/2] ^= 0xff
		forged := append([]driver.CapturedCommit{}, commits...)
		forged[len(forged)-1].Pages = append(append([]driver.Page{}, last.Pages[:len(last.Pages)-1]...), driver.Page{Pgno: p.Pgno, Data: bad})
		if err := verifyCommits(testPS, base, forged, nil, img); err == nil {
			t.Fatalf("a corrupted page %d in the last commit was not caught", p.Pgno)
		}
	})
}
