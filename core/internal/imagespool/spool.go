// Package imagespool keeps a copy of a database image taken at commit time
// without holding it in memory: the logs that need the database as one
// commit left it, after the database itself has moved on (the LTX log's
// snapshot, the changeset log's snapshot records, backups), copy it here
// page by page (driver.ImageWriter) on the runtime's thread and read it
// back, page by page, while they upload.
//
// Up to InMemory bytes a spool is kept in memory (the cost of a temporary
// file would dominate a small cell); beyond, in an unlinked temporary file,
// which lives as long as its descriptor, so a crash leaves nothing behind.
package imagespool

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"

	"github.com/cellb/cellb/core/driver"
)

// InMemory is the largest image a spool keeps in memory.
const InMemory = 1 << 20

// ErrClosed: the spool was read after Close.
var ErrClosed = errors.New("imagespool: the spooled database is closed")

// Spool is one image. Write appends (while it is filled); ReadAt, WriteAt
// and Truncate work on the whole image. It is not safe for concurrent use
// except for concurrent ReadAt calls.
type Spool struct {
	dir  string
	mem  []byte
	f    *os.File
	bw   *bufio.Writer
	size int64
	done bool
}

// New returns an empty spool whose file, if it needs one, goes in dir (the
// system's temporary directory if empty).
func New(dir string) *Spool { return &Spool{dir: dir} }

// Of returns a spool holding img (copied).
func Of(dir string, img []byte) (*Spool, error) {
	s := New(dir)
	if _, err := s.Write(img); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.flush(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// toFile moves the image into a temporary file.
func (s *Spool) toFile() error {
	f, err := os.CreateTemp(s.dir, "cellb-image-*")
	if err != nil {
		return err
	}
	os.Remove(f.Name())
	s.f, s.bw = f, bufio.NewWriterSize(f, 1<<20)
	if _, err := s.bw.Write(s.mem); err != nil {
		return err
	}
	s.mem = nil
	return nil
}

// Write appends to the spool, moving it to a file once it outgrows memory.
func (s *Spool) Write(p []byte) (int, error) {
	if s.done {
		return 0, ErrClosed
	}
	if s.f == nil && int64(len(s.mem))+int64(len(p)) > InMemory {
		if err := s.toFile(); err != nil {
			return 0, err
		}
	}
	if s.f != nil && s.bw == nil { // after WriteAt or Truncate
		n, err := s.f.WriteAt(p, s.size)
		s.size += int64(n)
		return n, err
	}
	s.size += int64(len(p))
	if s.f != nil {
		return s.bw.Write(p)
	}
	s.mem = append(s.mem, p...)
	return len(p), nil
}

func (s *Spool) flush() error {
	if s.bw == nil {
		return nil
	}
	err := s.bw.Flush()
	s.bw = nil
	return err
}

// Size is the image's size in bytes.
func (s *Spool) Size() int64 { return s.size }

// ReadAt reads from the image.
func (s *Spool) ReadAt(p []byte, off int64) (int, error) {
	switch {
	case s == nil || s.done:
		return 0, ErrClosed
	case off >= s.size:
		return 0, io.EOF
	case s.f != nil:
		if int64(len(p)) > s.size-off {
			n, err := s.f.ReadAt(p[:s.size-off], off)
			if err == nil {
				err = io.EOF
			}
			return n, err
		}
		return s.f.ReadAt(p, off)
	}
	n := copy(p, s.mem[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt writes into the image (a page laid over it), growing it if the
// write ends past its end.
func (s *Spool) WriteAt(p []byte, off int64) (int, error) {
	if s.done {
		return 0, ErrClosed
	}
	end := off + int64(len(p))
	if s.f == nil && end > InMemory {
		if err := s.toFile(); err != nil {
			return 0, err
		}
	}
	if s.f != nil {
		if err := s.flush(); err != nil {
			return 0, err
		}
		n, err := s.f.WriteAt(p, off)
		s.size = max(s.size, off+int64(n))
		return n, err
	}
	if end > int64(len(s.mem)) {
		s.mem = append(s.mem, make([]byte, end-int64(len(s.mem)))...)
	}
	copy(s.mem[off:], p)
	s.size = max(s.size, end)
	return len(p), nil
}

// Truncate sets the image's size; growing it adds zeros.
func (s *Spool) Truncate(size int64) error {
	if s.done {
		return ErrClosed
	}
	if s.f == nil && size > InMemory {
		if err := s.toFile(); err != nil {
			return err
		}
	}
	if s.f != nil {
		if err := s.flush(); err != nil {
			return err
		}
		if err := s.f.Truncate(size); err != nil {
			return err
		}
	} else if size <= int64(len(s.mem)) {
		s.mem = s.mem[:size]
	} else {
		s.mem = append(s.mem, make([]byte, size-int64(len(s.mem)))...)
	}
	s.size = size
	return nil
}

// Reader reads the image from its start.
func (s *Spool) Reader() *io.SectionReader { return io.NewSectionReader(s, 0, s.size) }

// Close releases the spool (its file goes with its descriptor). A nil or
// closed spool may be closed again.
func (s *Spool) Close() {
	if s == nil || s.done {
		return
	}
	s.done = true
	s.mem = nil
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// FromConn copies conn's image into a new spool (a file in dir past
// InMemory bytes), page by page when the driver writes its image as a
// stream (driver.ImageWriter), else through one Serialize: an image-sized
// buffer for as long as the copy takes, the only way to read the database
// of a driver without it. Like Serialize it must not be called inside a
// transaction.
func FromConn(ctx context.Context, dir string, conn driver.Conn) (*Spool, error) {
	s := New(dir)
	err := driver.ErrUnsupported
	var n int64
	if iw, ok := conn.(driver.ImageWriter); ok {
		// A wrapper may implement it and answer ErrUnsupported (having
		// written nothing) for a Conn that does not.
		n, err = iw.WriteImage(ctx, s)
	}
	if errors.Is(err, driver.ErrUnsupported) && n == 0 {
		var img []byte
		if img, err = conn.Serialize(ctx); err == nil {
			if len(img) <= InMemory {
				s.mem, s.size = img, int64(len(img)) // Serialize's own copy
			} else {
				_, err = s.Write(img)
			}
		}
	}
	if err == nil {
		err = s.flush()
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}
