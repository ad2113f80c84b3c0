package driver

import (
	"bytes"
	"testing"

	"github.com/cellb/cellb/core/page"
)

// The port's names are core/page's types (aliases), not copies of them:
// these lines compile only while that holds, so a page or a pool built by
// the formats passes through the port unconverted.
var (
	_ page.Page  = Page{}
	_ *page.Pool = new(PagePool)
	_ []Page     = []page.Page(nil)
)

// Release returns the commit's buffers to its pool, which poisons them at
// once, so a reader that kept one sees the fault rather than plausible
// stale bytes.
func TestReleasePoisonsAndClears(t *testing.T) {
	var p PagePool
	data := p.Get(4096)
	for i := range data {
		data[i] = byte(i)
	}
	// What a buffer holds once the pool has taken it back.
	poisoned := p.Get(4096)
	p.Put(poisoned)

	c := CapturedCommit{PageSize: 4096, PageCount: 1, Pages: []Page{{Pgno: 1, Data: data}}, Pool: &p}
	c.Release()
	if c.Pages != nil || c.Pool != nil {
		t.Fatal("Release left the commit's pages in place")
	}
	if !bytes.Equal(data, poisoned) || bytes.Equal(data[:2], []byte{0, 1}) {
		t.Fatal("a released buffer kept its bytes")
	}
	c.Release() // a second Release has nothing left to return
}
