// Package synthdb is a test double for the memory tests of the logs
// (issue 13): a database whose pages are computed, not stored, so a test's
// own memory does not grow with the database's size and the heap it
// measures is the log's. Page n holds n and the version it was last written
// at, then zeros. A Conn reads and restores its image page by page
// (driver.ImageWriter, driver.ImageRestorer), captures pages when asked,
// and records "row changes" as a session would: a changeset lists the
// (page, version) pairs written since the session started.
//
// Only tests import it.
package synthdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/heaptest"
)

// PageSize is every synthetic database's page size.
const PageSize = 4096

// HeapPeak samples the live heap's peak (heaptest.HeapPeak).
type HeapPeak = heaptest.HeapPeak

// Conn is one synthetic database.
type Conn struct {
	Count    uint32
	Version  map[uint32]uint32
	Schema   int64
	Peak     *HeapPeak
	Capture  bool
	commits  []driver.CapturedCommit
	sessions []*session
}

// New returns a database of mib MiB whose pages are all at version 0.
func New(mib int, peak *HeapPeak, capture bool) *Conn {
	return &Conn{Count: uint32(mib << 20 / PageSize), Version: map[uint32]uint32{}, Peak: peak, Capture: capture}
}

// Page writes page pgno at version v into buf.
func Page(buf []byte, pgno, v uint32) {
	clear(buf)
	binary.BigEndian.PutUint32(buf, pgno)
	binary.BigEndian.PutUint32(buf[4:], v)
}

// Write commits version v of pages (captured, and recorded by open
// sessions).
func (c *Conn) Write(v uint32, pgnos ...uint32) {
	cc := driver.CapturedCommit{PageSize: PageSize, PageCount: c.Count}
	for _, p := range pgnos {
		c.Version[p] = v
		for _, s := range c.sessions {
			s.changes = binary.BigEndian.AppendUint32(s.changes, p)
			s.changes = binary.BigEndian.AppendUint32(s.changes, v)
		}
		if c.Capture {
			buf := make([]byte, PageSize)
			Page(buf, p, v)
			cc.Pages = append(cc.Pages, driver.Page{Pgno: p, Data: buf})
		}
	}
	if c.Capture {
		c.commits = append(c.commits, cc)
	}
}

// TakeCommits is driver.PageCapturer's.
func (c *Conn) TakeCommits(ctx context.Context) ([]driver.CapturedCommit, error) {
	out := c.commits
	c.commits = nil
	return out, nil
}

// Serialize builds the whole image (what the streaming paths avoid).
func (c *Conn) Serialize(ctx context.Context) ([]byte, error) {
	img := make([]byte, int(c.Count)*PageSize)
	for p := uint32(1); p <= c.Count; p++ {
		Page(img[int(p-1)*PageSize:int(p)*PageSize], p, c.Version[p])
	}
	c.Peak.Sample()
	return img, nil
}

// WriteImage is driver.ImageWriter's.
func (c *Conn) WriteImage(ctx context.Context, w io.Writer) (int64, error) {
	buf := make([]byte, PageSize)
	var n int64
	for p := uint32(1); p <= c.Count; p++ {
		Page(buf, p, c.Version[p])
		m, err := w.Write(buf)
		n += int64(m)
		if err != nil {
			return n, err
		}
		if p%4096 == 0 {
			c.Peak.Sample()
		}
	}
	return n, nil
}

// Restore installs a whole image.
func (c *Conn) Restore(ctx context.Context, image []byte) error {
	f := &File{Peak: c.Peak}
	if _, err := f.WriteAt(image, 0); err != nil {
		return err
	}
	return c.install(f)
}

// RestoreWith is driver.ImageRestorer's: the file keeps each page's
// version, not its bytes.
func (c *Conn) RestoreWith(ctx context.Context, fill func(w driver.ImageFile) error) error {
	f := &File{Peak: c.Peak}
	if err := fill(f); err != nil {
		return err
	}
	return c.install(f)
}

func (c *Conn) install(f *File) error {
	if f.Bad != nil {
		return f.Bad
	}
	c.Count = uint32(f.Size / PageSize)
	c.Version = map[uint32]uint32{}
	for i, v := range f.Seen[:c.Count] {
		if v != 0 {
			c.Version[uint32(i+1)] = v
		}
	}
	c.commits = nil
	return nil
}

// File is an image written at offsets and checked as it arrives: it keeps
// the version each page arrived with and nothing else.
type File struct {
	Peak  *HeapPeak
	Size  int64
	Seen  []uint32
	Bad   error
	want  [PageSize]byte
	since int // bytes since the last sample
}

func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if off%PageSize != 0 || len(p)%PageSize != 0 {
		// Streams cut anywhere: keep what fits whole pages, checked by
		// the next write when it completes one. Tests write page-aligned
		// megabytes, so this is a failure.
		f.Bad = fmt.Errorf("a write of %d bytes at %d is not page-aligned", len(p), off)
		return len(p), nil
	}
	for i := 0; i < len(p); i += PageSize {
		pgno := uint32((off+int64(i))/PageSize) + 1
		v := binary.BigEndian.Uint32(p[i+4:])
		for int(pgno) > len(f.Seen) {
			f.Seen = append(f.Seen, 0)
		}
		f.Seen[pgno-1] = v
		Page(f.want[:], pgno, v)
		if !bytes.Equal(p[i:i+PageSize], f.want[:]) && f.Bad == nil {
			f.Bad = fmt.Errorf("page %d is not a page the database ever held", pgno)
		}
	}
	if f.since += len(p); f.Peak != nil && f.since >= 1<<20 {
		f.Peak.Sample()
		f.since = 0
	}
	f.Size = max(f.Size, off+int64(len(p)))
	return len(p), nil
}

func (f *File) Truncate(size int64) error {
	f.Size = size
	if n := int(size / PageSize); n < len(f.Seen) {
		f.Seen = f.Seen[:n]
	}
	return nil
}

// Check compares the file with c's pages.
func (f *File) Check(c *Conn) error {
	if f.Bad != nil {
		return f.Bad
	}
	if f.Size != int64(c.Count)*PageSize {
		return fmt.Errorf("%d bytes, the database has %d", f.Size, int64(c.Count)*PageSize)
	}
	for i, v := range f.Seen {
		if v != c.Version[uint32(i+1)] {
			return fmt.Errorf("page %d at version %d, the database has %d", i+1, v, c.Version[uint32(i+1)])
		}
	}
	return nil
}

type session struct {
	c       *Conn
	changes []byte
}

func (s *session) Changeset() ([]byte, error) { return s.changes, nil }
func (s *session) Close() error {
	for i, o := range s.c.sessions {
		if o == s {
			s.c.sessions = append(s.c.sessions[:i], s.c.sessions[i+1:]...)
			break
		}
	}
	return nil
}

// StartSession is driver.Sessioner's.
func (c *Conn) StartSession(ctx context.Context, tables ...string) (driver.Session, error) {
	s := &session{c: c}
	c.sessions = append(c.sessions, s)
	return s, nil
}

// ApplyChangeset is driver.Sessioner's.
func (c *Conn) ApplyChangeset(ctx context.Context, cs []byte) error {
	if len(cs)%8 != 0 {
		return errors.New("synthdb: a changeset of a whole number of pairs")
	}
	for i := 0; i < len(cs); i += 8 {
		c.Version[binary.BigEndian.Uint32(cs[i:])] = binary.BigEndian.Uint32(cs[i+4:])
	}
	return nil
}

var errNoSQL = errors.New("synthdb: no SQL beyond the changeset log's own queries")

// Query answers the changeset log's schema_version and table queries.
func (c *Conn) Query(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
	switch {
	case bytes.Contains([]byte(sql), []byte("pragma_schema_version")):
		return &rows{vals: [][]any{{c.Schema}}}, nil
	case bytes.Contains([]byte(sql), []byte("sqlite_schema")):
		return &rows{}, nil
	}
	return nil, errNoSQL
}

func (c *Conn) Exec(ctx context.Context, sql string, args ...any) (driver.Result, error) {
	return driver.Result{}, errNoSQL
}
func (c *Conn) Begin(ctx context.Context) error              { return nil }
func (c *Conn) Commit(ctx context.Context) error             { return nil }
func (c *Conn) Rollback(ctx context.Context) error           { return nil }
func (c *Conn) InTransaction() bool                          { return false }
func (c *Conn) PageSize(ctx context.Context) (int, error)    { return PageSize, nil }
func (c *Conn) PageCount(ctx context.Context) (int64, error) { return int64(c.Count), nil }
func (c *Conn) SetAuthorizer(fn driver.Authorizer) error     { return nil }
func (c *Conn) Close() error                                 { return nil }

type rows struct {
	vals [][]any
	i    int
}

func (r *rows) Columns() []string { return []string{"v"} }
func (r *rows) Next() bool        { r.i++; return r.i <= len(r.vals) }
func (r *rows) Values() []any     { return r.vals[r.i-1] }
func (r *rows) Err() error        { return nil }
func (r *rows) Close() error      { return nil }

// Whole hides ImageWriter and ImageRestorer: a driver that only reads and
// restores whole images.
type Whole struct{ *Conn }

func (w Whole) WriteImage()  {} // shadows the method with another signature
func (w Whole) RestoreWith() {} // idem

var (
	_ driver.Conn          = (*Conn)(nil)
	_ driver.PageCapturer  = (*Conn)(nil)
	_ driver.Sessioner     = (*Conn)(nil)
	_ driver.ImageWriter   = (*Conn)(nil)
	_ driver.ImageRestorer = (*Conn)(nil)
)
