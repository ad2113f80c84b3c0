package backup

import (
	"context"
	"errors"
	"math/rand/v2"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
)

// memPages is a database reduced to its pages: the backup log only moves
// images and pages, so SQL is out of scope here (real SQLite runs in the
// drivers' tests). With capture it records each commit's changed pages.
type memPages struct {
	pageSize int
	pages    [][]byte
	capture  bool
	dirty    map[uint32]bool
	commits  []driver.CapturedCommit
	// pool supplies captured pages as a real driver's does, so a log that
	// kept reading pages it released would read poison.
	pool driver.PagePool
}

func newMemPages(pageSize int, capture bool) *memPages {
	return &memPages{pageSize: pageSize, capture: capture, dirty: map[uint32]bool{}}
}

// step makes one random commit: grow, shrink or rewrite a few pages.
func (m *memPages) step(r *rand.Rand) {
	n := len(m.pages)
	switch {
	case n == 0 || r.IntN(6) == 0:
		for range 1 + r.IntN(3) {
			m.pages = append(m.pages, make([]byte, m.pageSize))
			m.scribble(uint32(len(m.pages)), r)
		}
	case n > 2 && r.IntN(8) == 0:
		m.pages = m.pages[:n-1-r.IntN(n/2)]
	default:
		for range 1 + r.IntN(3) {
			m.scribble(uint32(1+r.IntN(n)), r)
		}
	}
	m.record()
}

// rewrite commits new bytes in page 1 only: the database keeps its size.
func (m *memPages) rewrite(r *rand.Rand) {
	m.scribble(1, r)
	m.record()
}

func (m *memPages) record() {
	if m.capture {
		cc := driver.CapturedCommit{PageSize: m.pageSize, PageCount: uint32(len(m.pages)), Pool: &m.pool}
		for pg := uint32(1); pg <= uint32(len(m.pages)); pg++ {
			if m.dirty[pg] {
				data := m.pool.Get(m.pageSize)
				copy(data, m.pages[pg-1])
				cc.Pages = append(cc.Pages, driver.Page{Pgno: pg, Data: data})
			}
		}
		m.commits = append(m.commits, cc)
	}
	m.dirty = map[uint32]bool{}
}

func (m *memPages) scribble(pg uint32, r *rand.Rand) {
	p := m.pages[pg-1]
	for range 6 {
		p[r.IntN(len(p))] = byte(r.Uint32())
	}
	m.dirty[pg] = true
}

func (m *memPages) image() []byte {
	out := []byte{}
	for _, p := range m.pages {
		out = append(out, p...)
	}
	return out
}

var errNoSQL = errors.New("memPages runs no SQL")

func (m *memPages) TakeCommits(ctx context.Context) ([]driver.CapturedCommit, error) {
	if !m.capture {
		return nil, driver.ErrUnsupported
	}
	out := m.commits
	m.commits = nil
	return out, nil
}
func (m *memPages) Exec(context.Context, string, ...any) (driver.Result, error) {
	return driver.Result{}, errNoSQL
}
func (m *memPages) Query(context.Context, string, ...any) (driver.Rows, error) {
	return nil, errNoSQL
}
func (m *memPages) Begin(context.Context) error              { return nil }
func (m *memPages) Commit(context.Context) error             { return nil }
func (m *memPages) Rollback(context.Context) error           { return nil }
func (m *memPages) InTransaction() bool                      { return false }
func (m *memPages) PageSize(context.Context) (int, error)    { return m.pageSize, nil }
func (m *memPages) PageCount(context.Context) (int64, error) { return int64(len(m.pages)), nil }
func (m *memPages) Serialize(context.Context) ([]byte, error) {
	return m.image(), nil
}
func (m *memPages) Restore(ctx context.Context, image []byte) error {
	m.pages = nil
	for off := 0; off+m.pageSize <= len(image); off += m.pageSize {
		m.pages = append(m.pages, append([]byte(nil), image[off:off+m.pageSize]...))
	}
	m.commits = nil
	m.dirty = map[uint32]bool{}
	return nil
}
func (m *memPages) SetAuthorizer(driver.Authorizer) error { return nil }
func (m *memPages) Close() error                          { return nil }

var (
	_ driver.Conn         = (*memPages)(nil)
	_ driver.PageCapturer = (*memPages)(nil)
)

// openReq is the request the runtime makes for conn: pages captured when
// the fake captures them, and what it captured so far taken and dropped
// first (it is in the log's base).
func openReq(cell string, epoch uint64, conn driver.Conn, restore bool) durability.OpenRequest {
	m, ok := conn.(*memPages)
	capture := ok && m.capture
	if capture {
		m.TakeCommits(context.Background())
	}
	return durability.OpenRequest{Cell: cell, Epoch: epoch, Conn: conn, Restore: restore, PagesCaptured: capture}
}
