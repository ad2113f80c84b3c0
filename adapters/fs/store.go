//go:build unix

package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/store"
	"github.com/spf13/afero"
)

// Store is a store.Store on a local directory: the portable bucket
// (store.Bucket, which validates keys and arguments, checks ranges and
// classifies errors) over the files driver. It is safe for concurrent use
// by goroutines and by processes sharing the directory; see the package
// documentation for what it promises.
type Store struct {
	*store.Bucket
	d *driver
}

// driver is the store.Driver on a local directory: the file operations,
// their locks and fsyncs, and the records of versions and metadata.
type driver struct {
	root       string
	fsys       afero.Fs
	closeFs    func() error // closes the default file system, nil for an injected one
	log        *slog.Logger
	clock      clock.Clock
	tempExpiry time.Duration
	locks      *locker
	// sidecarsOnly: Put records in sidecars, never in the attribute.
	sidecarsOnly bool
	// bufs holds the buffers bodies are copied through to their files.
	bufs sync.Pool
	// dirSyncs shares directory fsyncs between concurrent writers.
	dirSyncs dirSyncs

	unnamedOnce sync.Once
	unnamedFs   unnamedFs // nil until probed, and when unavailable

	metaOnce sync.Mutex
	metaOK   bool // the store's directories exist

	// inUse is read-held by every call, so Close waits for calls in
	// flight before it releases descriptors they may be using.
	inUse  sync.RWMutex
	closed bool
}

var _ store.Driver = (*driver)(nil)

// Open returns the Store on the directory root, which must exist (see
// WithCreateRoot). Open creates nothing: the store's own directory appears
// with the first write, so a read-only bucket can be read. Open does remove
// temporary files older than the expiry (see WithTempExpiry) when it can.
func Open(root string, opts ...Option) (*Store, error) {
	cfg := config{tempExpiry: DefaultTempExpiry}
	for _, o := range opts {
		o(&cfg)
	}
	if root == "" {
		return nil, fmt.Errorf("fs: open: empty root path")
	}
	if cfg.createRoot {
		if err := os.MkdirAll(root, 0o777); err != nil {
			return nil, fmt.Errorf("fs: open: %w", err)
		}
	}
	s := &driver{
		root:         root,
		fsys:         cfg.fsys,
		log:          cfg.logger,
		clock:        clock.Or(cfg.clock),
		tempExpiry:   cfg.tempExpiry,
		sidecarsOnly: cfg.sidecars,
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.fsys == nil {
		fi, err := os.Stat(root)
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, fmt.Errorf("fs: open %s: %w", root, ErrNoRoot)
		}
		if err != nil {
			return nil, fmt.Errorf("fs: open: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("fs: open %s: not a directory", root)
		}
		fsys, closeFs, err := osFs(root)
		if err != nil {
			return nil, fmt.Errorf("fs: open %s: %w", root, err)
		}
		s.fsys, s.closeFs = fsys, closeFs
	}
	fi, err := s.fsys.Stat(".")
	if err == nil && !fi.IsDir() {
		err = errors.New("root is not a directory")
	}
	if err == nil {
		_, err = identityOf(fi)
	}
	if err != nil {
		if s.closeFs != nil {
			s.closeFs()
		}
		return nil, fmt.Errorf("fs: open %s: %w", root, err)
	}
	s.locks = newLocker(s.fsys, s.ensureMeta)
	s.bufs.New = func() any { return new([copyBufSize]byte) }
	s.sweepTemps()
	return &Store{Bucket: store.NewBucket(s), d: s}, nil
}

// Root is the directory the store was opened on.
func (s *Store) Root() string { return s.d.root }

// Close releases the lock files and the root directory. It waits for calls
// in flight; calls made after Close fail with ErrClosed.
func (s *driver) Close() error {
	s.inUse.Lock()
	defer s.inUse.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.locks.close()
	if s.closeFs != nil {
		err = errors.Join(err, s.closeFs())
	}
	return err
}

// begin marks a call in flight; the caller must call s.end. It fails,
// before anything is done, when ctx has ended (the Bucket checks it only
// before writes) or the store is closed.
func (s *driver) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.inUse.RLock()
	if s.closed {
		s.inUse.RUnlock()
		return ErrClosed
	}
	return nil
}

func (s *driver) end() { s.inUse.RUnlock() }

// ensureMeta creates the store's own directories once per Store (and again
// if something removed them: callers retry after ENOENT via resetMeta).
func (s *driver) ensureMeta() error {
	s.metaOnce.Lock()
	defer s.metaOnce.Unlock()
	if s.metaOK {
		return nil
	}
	for _, dir := range []string{tmpDir, lockDir, recordDir} {
		if _, err := s.mkdirs(dir); err != nil {
			return err
		}
	}
	s.metaOK = true
	return nil
}

func (s *driver) resetMeta() {
	s.metaOnce.Lock()
	s.metaOK = false
	s.metaOnce.Unlock()
}

// readAll reads an open file to its end; size is the expected size (from
// a Stat, or a guess).
func readAll(f afero.File, size int64) ([]byte, error) {
	buf := make([]byte, 0, size+1) // +1 so a file that grew is noticed
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}
