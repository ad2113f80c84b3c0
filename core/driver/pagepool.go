package driver

import "github.com/cellb/cellb/core/page"

// Page is one database page. It is core/page's Page under the port's
// name: the formats (core/ltx, core/wal) carry the same type without
// importing the port.
type Page = page.Page

// PagePool recycles page buffers between a capturing connection and the
// durability log, which hands them back (CapturedCommit.Release) once it
// has encoded them; released buffers are poisoned at once. It is core/page's
// Pool under the port's name (see there for the details); the zero value
// is ready to use.
type PagePool = page.Pool

// Release hands the commit's page buffers back to the pool they came from
// (Pool), if any, and clears Pages. A consumer calls it once it no longer
// reads the pages, and at most once: the commit's pages must not be read
// afterwards, by it or by anyone it shared them with.
func (c *CapturedCommit) Release() {
	if c.Pool != nil {
		for _, pg := range c.Pages {
			c.Pool.Put(pg.Data)
		}
	}
	c.Pool = nil
	c.Pages = nil
}
