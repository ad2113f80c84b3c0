package wasm

import (
	"fmt"
	"math"
	"sync"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/util/vfsutil"
	"github.com/ncruces/go-sqlite3/vfs"
	"github.com/ncruces/go-sqlite3/vfs/memdb"
)

// The library finds a Go VFS only by the name it was registered under, in a
// process-wide registry, so the two wrappers are registered once per
// process under fixed names. They hold no state of their own: everything
// about one connection lives in the recorder attached to its main database
// file after the open (see Conn.install).
const (
	osVFSName  = "cellb-wasm-os"
	memVFSName = "cellb-wasm-mem"
)

var registerVFS = sync.OnceFunc(func() {
	vfs.Register(osVFSName, captureVFS{base: vfs.Find("")})
	vfs.Register(memVFSName, captureVFS{base: vfs.Find("memdb")})
})

// memdb must be linked in for vfs.Find("memdb") to find it.
var _ = memdb.Create

// captureVFS wraps a base VFS (the operating system's, or memdb for
// in-memory databases) so that the main database file and its write-ahead
// log can report what they write.
type captureVFS struct{ base vfs.VFS }

func (v captureVFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, out, err := vfsutil.WrapOpen(v.base, name, flags)
	return v.wrap(f, out, err, flags, nil)
}

func (v captureVFS) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, out, err := vfsutil.WrapOpenFilename(v.base, name, flags)
	return v.wrap(f, out, err, flags, name)
}

func (v captureVFS) wrap(f vfs.File, out vfs.OpenFlag, err error, flags vfs.OpenFlag, name *vfs.Filename) (vfs.File, vfs.OpenFlag, error) {
	switch {
	case err != nil:
		return f, out, err
	case flags&vfs.OPEN_MAIN_DB != 0:
		return &captureFile{fwdFile: fwdFile{f}}, out, nil
	case flags&vfs.OPEN_WAL != 0:
		// The log belongs to a main file opened before it. Its recorder
		// may be attached later (the log often opens while the driver is
		// still setting the connection up), so the log keeps the main file,
		// not the recorder.
		main, _ := vfsutil.UnwrapFile[*captureFile](name.DatabaseFile())
		if main != nil && main.rec != nil && !main.rec.wal {
			// A rollback-journal connection refuses journal_mode=WAL, so
			// this database reached WAL mode some other way: its commits
			// would bypass the main file. Say so rather than capture
			// silently wrong pages.
			main.rec.fail(errWALOpened)
		}
		return &walFile{fwdFile: fwdFile{f}, main: main}, out, nil
	}
	return f, out, nil
}

func (v captureVFS) Delete(name string, syncDir bool) error { return v.base.Delete(name, syncDir) }

func (v captureVFS) Access(name string, flags vfs.AccessFlag) (bool, error) {
	return v.base.Access(name, flags)
}

func (v captureVFS) FullPathname(name string) (string, error) { return v.base.FullPathname(name) }

// captureFile is a main database file. Until a recorder is attached it only
// forwards. In rollback-journal mode every change is reported to the
// recorder, which turns a transaction's changes into a commit when SQLite
// releases its exclusive lock. In WAL mode the main file only receives
// checkpoints, which are not commits: the log is watched instead.
type captureFile struct {
	fwdFile
	rec *recorder
}

// rollbackRec is the recorder if it captures this file's writes.
func (f *captureFile) rollbackRec() *recorder {
	if f.rec != nil && !f.rec.wal {
		return f.rec
	}
	return nil
}

func (f *captureFile) WriteAt(p []byte, off int64) (int, error) {
	if r := f.rollbackRec(); r != nil {
		r.beforeWrite(f.File, off, off+int64(len(p)))
		defer r.wrote(off, int64(len(p)))
	}
	return f.File.WriteAt(p, off)
}

func (f *captureFile) Truncate(size int64) error {
	if r := f.rollbackRec(); r != nil {
		r.beforeWrite(f.File, size, math.MaxInt64)
	}
	return f.File.Truncate(size)
}

func (f *captureFile) SizeHint(size int64) error {
	if r := f.rollbackRec(); r != nil {
		r.beforeChange(f.File)
	}
	return vfsutil.WrapSizeHint(f.File, size)
}

func (f *captureFile) Unlock(level vfs.LockLevel) error {
	if r := f.rollbackRec(); r != nil {
		r.finish(f.File)
	}
	return f.File.Unlock(level)
}

func (f *captureFile) Close() error {
	if f.rec != nil {
		f.rec.abandon()
		f.rec = nil
	}
	return f.File.Close()
}

// CommitAtomicWrite is forwarded like the other batch-atomic brackets (the
// recorder reads committed pages at the end of the transaction, so a batch
// the file system rolled back needs no special case), but a committed batch
// is noted: it does not advance the change counter.
func (f *captureFile) CommitAtomicWrite() error {
	err := vfsutil.WrapCommitAtomicWrite(f.File)
	if r := f.rollbackRec(); err == nil && r != nil {
		r.batchCommitted()
	}
	return err
}

// walFile is the write-ahead log of a main database file. In WAL mode the
// log is where commits land: each write is reported to the main file's
// recorder, which turns the frames of a transaction into a commit when the
// frame that marks the commit has been written.
type walFile struct {
	fwdFile
	main *captureFile
}

func (f *walFile) walRec() *recorder {
	if f.main != nil && f.main.rec != nil && f.main.rec.wal {
		return f.main.rec
	}
	return nil
}

func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	if r := f.walRec(); r != nil {
		if err != nil {
			r.fail(fmt.Errorf("writing the write-ahead log: %w", err))
		} else {
			r.walWrote(f.File, p, off)
		}
	}
	return n, err
}

func (f *walFile) Truncate(size int64) error {
	err := f.File.Truncate(size)
	if r := f.walRec(); r != nil && err == nil {
		r.walTruncated(size)
	}
	return err
}

// fwdFile forwards every optional interface of the library's files: a
// wrapper that hides one silently changes SQLite's behaviour (without
// shared memory, for instance, WAL mode cannot start).
type fwdFile struct{ vfs.File }

func (f *fwdFile) Unwrap() vfs.File                   { return f.File }
func (f *fwdFile) LockState() vfs.LockLevel           { return vfsutil.WrapLockState(f.File) }
func (f *fwdFile) PersistWAL() bool                   { return vfsutil.WrapPersistWAL(f.File) }
func (f *fwdFile) SetPersistWAL(keep bool)            { vfsutil.WrapSetPersistWAL(f.File, keep) }
func (f *fwdFile) PowersafeOverwrite() bool           { return vfsutil.WrapPowersafeOverwrite(f.File) }
func (f *fwdFile) SetPowersafeOverwrite(on bool)      { vfsutil.WrapSetPowersafeOverwrite(f.File, on) }
func (f *fwdFile) ChunkSize(size int)                 { vfsutil.WrapChunkSize(f.File, size) }
func (f *fwdFile) SizeHint(size int64) error          { return vfsutil.WrapSizeHint(f.File, size) }
func (f *fwdFile) HasMoved() (bool, error)            { return vfsutil.WrapHasMoved(f.File) }
func (f *fwdFile) Overwrite() error                   { return vfsutil.WrapOverwrite(f.File) }
func (f *fwdFile) SyncSuper(super string) error       { return vfsutil.WrapSyncSuper(f.File, super) }
func (f *fwdFile) CommitPhaseTwo() error              { return vfsutil.WrapCommitPhaseTwo(f.File) }
func (f *fwdFile) BeginAtomicWrite() error            { return vfsutil.WrapBeginAtomicWrite(f.File) }
func (f *fwdFile) CommitAtomicWrite() error           { return vfsutil.WrapCommitAtomicWrite(f.File) }
func (f *fwdFile) RollbackAtomicWrite() error         { return vfsutil.WrapRollbackAtomicWrite(f.File) }
func (f *fwdFile) CheckpointStart()                   { vfsutil.WrapCheckpointStart(f.File) }
func (f *fwdFile) CheckpointDone()                    { vfsutil.WrapCheckpointDone(f.File) }
func (f *fwdFile) BusyHandler(handler func() bool)    { vfsutil.WrapBusyHandler(f.File, handler) }
func (f *fwdFile) SharedMemory() vfs.SharedMemory     { return vfsutil.WrapSharedMemory(f.File) }
func (f *fwdFile) MemoryMapper() vfs.MemoryMapper     { return vfsutil.WrapMemoryMapper(f.File) }
func (f *fwdFile) Pragma(n, v string) (string, error) { return vfsutil.WrapPragma(f.File, n, v) }

// SetDB forwards the library's handle to its connection, which some files
// use (it has no exported interface of its own).
func (f *fwdFile) SetDB(db any) {
	if s, ok := f.File.(interface{ SetDB(any) }); ok {
		s.SetDB(db)
	}
}

var (
	_ vfs.FileLockState          = (*fwdFile)(nil)
	_ vfs.FilePersistWAL         = (*fwdFile)(nil)
	_ vfs.FilePowersafeOverwrite = (*fwdFile)(nil)
	_ vfs.FileChunkSize          = (*fwdFile)(nil)
	_ vfs.FileSizeHint           = (*fwdFile)(nil)
	_ vfs.FileHasMoved           = (*fwdFile)(nil)
	_ vfs.FileOverwrite          = (*fwdFile)(nil)
	_ vfs.FileSync               = (*fwdFile)(nil)
	_ vfs.FileCommitPhaseTwo     = (*fwdFile)(nil)
	_ vfs.FileBatchAtomicWrite   = (*fwdFile)(nil)
	_ vfs.FileCheckpoint         = (*fwdFile)(nil)
	_ vfs.FilePragma             = (*fwdFile)(nil)
	_ vfs.FileBusyHandler        = (*fwdFile)(nil)
	_ vfs.FileSharedMemory       = (*fwdFile)(nil)
	_ vfs.FileMemoryMapper       = (*fwdFile)(nil)
	_ vfs.FileUnwrap             = (*fwdFile)(nil)
	_ vfs.FileSizeHint           = (*captureFile)(nil)
	_ vfs.FileBatchAtomicWrite   = (*captureFile)(nil)
	_ vfs.FileUnwrap             = (*walFile)(nil)
	_ vfs.VFSFilename            = captureVFS{}
)

// mainFile finds the captureFile under the main database of conn.
func mainFile(conn *sqlite3.Conn) (*captureFile, error) {
	h, err := conn.FileControl("main", sqlite3.FCNTL_FILE_POINTER)
	if err != nil {
		return nil, err
	}
	f, ok := h.(vfs.File)
	if !ok {
		return nil, errNoMainFile
	}
	cf, ok := vfsutil.UnwrapFile[*captureFile](f)
	if !ok {
		return nil, errNoMainFile
	}
	return cf, nil
}
