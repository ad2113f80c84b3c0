package nodelog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/cellb/cellb/core/internal/flock"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cellb/cellb/core/atomicfile"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// A single host's processes (host.SingleHost) keep no node record in the
// bucket: each process's session of the node log is fenced by an OS file
// lock instead, <dir>/<generation>.lock, held from before its first bundle
// until it exits. The kernel drops the lock of a process that dies for any
// reason (and a machine restart drops every lock), so "the lock is free" is
// exactly "the session's process is gone". Every process sharing a data
// directory writes under one node id, kept in <dir>/node-id.

const (
	localNodeFile = "node-id"
	localLockExt  = ".lock"
	localFoldExt  = ".fold"
)

// ErrLocalClosed fails a ConfirmLog after the session closed.
var ErrLocalClosed = errors.New("nodelog: the local session is closed")

// LocalNodeID is the node id the single-host processes sharing dir write
// their node logs under: "host_<32 lowercase hex>", drawn by the first and
// kept in dir/node-id (linked into place, so two processes starting at once
// agree on one).
func LocalNodeID(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, localNodeFile)
	if id, err := readNodeID(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tmp, err := atomicfile.Temp(dir, "."+localNodeFile+".*", func(f *os.File) error {
		_, err := f.WriteString(LocalNodePrefix + hex.EncodeToString(b[:]) + "\n")
		return err
	})
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return "", err
	}
	return readNodeID(path)
}

func readNodeID(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(data))
	if err := store.ValidateKey(layout.BundleKey(id, "g", 1, 0)); err != nil || id == "" || strings.Contains(id, "/") {
		return "", fmt.Errorf("nodelog: %s holds no valid node id (%q)", path, id)
	}
	return id, nil
}

// LocalSession is one process's session of a single host's node log and
// its Confirmer: the session is current while this process holds its lock
// file, which no other process can take from it, so ConfirmLog reads
// nothing and succeeds until Close. Fenced fires only when the process
// fences itself (Fence: a cell's rows could not be tiered before its
// release); the session is then left for another process, or the next
// start, to fold once this one exits.
type LocalSession struct {
	dir, node, gen string
	f              *os.File

	fenced chan struct{}
	mu     sync.Mutex
	reason string
	closed bool
}

// LocalSupported reports whether this platform has the file locks a
// single host's node log is fenced by (LocalSession).
const LocalSupported = flock.Supported

// OpenLocalSession starts a session of node's log: a new generation (32
// lowercase hex) whose lock file in dir is created, locked and made
// durable (with the directory) before it returns, so any bundle the
// session writes has a lock file a recoverer finds after a machine
// restart.
func OpenLocalSession(dir, node string) (*LocalSession, error) {
	if !LocalSupported {
		return nil, errors.New("nodelog: a single host's node log needs file locks, which this platform lacks")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	gen := hex.EncodeToString(b[:])
	f, err := os.OpenFile(filepath.Join(dir, gen+localLockExt), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	held, err := flock.TryLock(f)
	if err == nil && !held {
		err = fmt.Errorf("nodelog: the new session's lock %s is held by another", f.Name())
	}
	if err == nil {
		_, err = fmt.Fprintf(f, "pid %d\n", os.Getpid())
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = atomicfile.SyncDir(dir)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &LocalSession{dir: dir, node: node, gen: gen, f: f, fenced: make(chan struct{})}, nil
}

// Node is the node id the session writes under.
func (s *LocalSession) Node() string { return s.node }

// Generation is the session's generation.
func (s *LocalSession) Generation() string { return s.gen }

// ConfirmLog implements Confirmer: nil while the session's lock is held
// (until Close) and the process has not fenced.
func (s *LocalSession) ConfirmLog(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.reason != "":
		return fmt.Errorf("%w: %s", ErrFenced, s.reason)
	case s.closed:
		return ErrLocalClosed
	}
	return nil
}

// Fence implements Confirmer: nothing is credited after it, and Close
// leaves the session's lock file for a recoverer.
func (s *LocalSession) Fence(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reason != "" {
		return
	}
	s.reason = reason
	close(s.fenced)
}

// Fenced implements Confirmer.
func (s *LocalSession) Fenced() <-chan struct{} { return s.fenced }

// FenceErr is why the session fenced, or nil.
func (s *LocalSession) FenceErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reason == "" {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrFenced, s.reason)
}

// Close lets the session's lock go. done says the session needs no
// recovery (its log closed final and deleted its bundles): its lock file
// is removed first. Otherwise the file stays and the next recovery in any
// process sharing the directory folds what the bucket still holds of the
// session.
func (s *LocalSession) Close(done bool) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	done = done && s.reason == ""
	s.mu.Unlock()
	var errs []error
	if done {
		// Removed while held: a recoverer that opened it before finds it
		// free afterwards and folds a session with no bundles.
		if err := os.Remove(s.f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, s.f.Close())...)
}

var _ Confirmer = (*LocalSession)(nil)
