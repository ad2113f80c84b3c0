package ltxlog

import (
	"context"
	"errors"
	"math/rand/v2"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
)

// pageDB is a database reduced to its pages: enough of driver.Conn for the
// log, whose job is pages, not SQL. Real SQLite runs in the drivers' tests.
type pageDB struct {
	pageSize int
	pages    [][]byte
	capture  bool
	changed  map[uint32]bool
	commits  []driver.CapturedCommit
	// pool supplies captured pages, as a real driver's does: a log that
	// released them before it stopped reading them would read poison.
	pool driver.PagePool
}

var errNoSQL = errors.New("pageDB has no SQL")

func newPageDB(pageSize int, capture bool) *pageDB {
	return &pageDB{pageSize: pageSize, capture: capture, changed: map[uint32]bool{}}
}

// mutate changes some pages (growing or shrinking the database) and commits.
func (d *pageDB) mutate(r *rand.Rand) {
	switch n := len(d.pages); {
	case n == 0 || r.IntN(8) == 0:
		for i := 0; i < 1+r.IntN(4); i++ {
			d.pages = append(d.pages, make([]byte, d.pageSize))
			d.touch(uint32(len(d.pages)), r)
		}
	case n > 2 && r.IntN(10) == 0:
		d.pages = d.pages[:n-1-r.IntN(n/2)]
	default:
		for i := 0; i < 1+r.IntN(3); i++ {
			d.touch(uint32(1+r.IntN(n)), r)
		}
	}
	d.touch(1, r) // SQLite rewrites page 1 on most commits
	d.commit()
}

func (d *pageDB) touch(pgno uint32, r *rand.Rand) {
	p := d.pages[pgno-1]
	for i := 0; i < 8; i++ {
		p[r.IntN(len(p))] = byte(r.Uint32())
	}
	d.changed[pgno] = true
}

func (d *pageDB) commit() {
	if !d.capture {
		return
	}
	cc := driver.CapturedCommit{PageSize: d.pageSize, PageCount: uint32(len(d.pages)), Pool: &d.pool}
	for pgno := uint32(1); pgno <= uint32(len(d.pages)); pgno++ {
		if d.changed[pgno] {
			data := d.pool.Get(d.pageSize)
			copy(data, d.pages[pgno-1])
			cc.Pages = append(cc.Pages, driver.Page{Pgno: pgno, Data: data})
		}
	}
	d.changed = map[uint32]bool{}
	d.commits = append(d.commits, cc)
}

func (d *pageDB) image() []byte {
	var out []byte
	for _, p := range d.pages {
		out = append(out, p...)
	}
	return out
}

func (d *pageDB) TakeCommits(ctx context.Context) ([]driver.CapturedCommit, error) {
	out := d.commits
	d.commits = nil
	return out, nil
}

func (d *pageDB) Exec(ctx context.Context, sql string, args ...any) (driver.Result, error) {
	return driver.Result{}, errNoSQL
}
func (d *pageDB) Query(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
	return nil, errNoSQL
}
func (d *pageDB) Begin(ctx context.Context) error    { return nil }
func (d *pageDB) Commit(ctx context.Context) error   { return nil }
func (d *pageDB) Rollback(ctx context.Context) error { return nil }
func (d *pageDB) InTransaction() bool                { return false }
func (d *pageDB) PageSize(ctx context.Context) (int, error) {
	return d.pageSize, nil
}
func (d *pageDB) PageCount(ctx context.Context) (int64, error) { return int64(len(d.pages)), nil }
func (d *pageDB) Serialize(ctx context.Context) ([]byte, error) {
	return d.image(), nil
}
func (d *pageDB) Restore(ctx context.Context, image []byte) error {
	d.pages = nil
	for off := 0; off+d.pageSize <= len(image); off += d.pageSize {
		d.pages = append(d.pages, append([]byte(nil), image[off:off+d.pageSize]...))
	}
	d.changed = map[uint32]bool{}
	d.commits = nil
	return nil
}
func (d *pageDB) SetAuthorizer(fn driver.Authorizer) error { return nil }
func (d *pageDB) Close() error                             { return nil }

// imageOnly hides TakeCommits, so the log diffs images.
type imageOnly struct{ driver.Conn }

var (
	_ driver.Conn         = (*pageDB)(nil)
	_ driver.PageCapturer = (*pageDB)(nil)
)

// openReq is the request the runtime makes for conn: pages captured when
// the fake captures them, and what it captured so far taken and dropped
// first (it is in the log's base).
func openReq(cell string, epoch uint64, conn driver.Conn, restore bool) durability.OpenRequest {
	d, ok := conn.(*pageDB)
	capture := ok && d.capture
	if capture {
		d.TakeCommits(context.Background())
	}
	return durability.OpenRequest{Cell: cell, Epoch: epoch, Conn: conn, Restore: restore, PagesCaptured: capture}
}
