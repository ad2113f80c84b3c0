package wasm

import (
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
// file after the open (see attachRecorder).
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
// in-memory databases) so that the main database file of each connection
// can report what it writes.
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
	if err != nil {
		return f, out, err
	}
	if flags&vfs.OPEN_WAL != 0 {
		// A write-ahead log bypasses the main file until a checkpoint:
		// pages written there would never be captured. The driver refuses
		// journal_mode=WAL, so this is a database that reached WAL mode
		// some other way; say so instead of capturing silently wrong pages.
		if main, ok := vfsutil.UnwrapFile[*captureFile](name.DatabaseFile()); ok && main.rec != nil {
			main.rec.fail(errWALOpened)
		}
	}
	if flags&vfs.OPEN_MAIN_DB == 0 {
		return f, out, nil
	}
	return &captureFile{File: f}, out, nil
}

func (v captureVFS) Delete(name string, syncDir bool) error { return v.base.Delete(name, syncDir) }

func (v captureVFS) Access(name string, flags vfs.AccessFlag) (bool, error) {
	return v.base.Access(name, flags)
}

func (v captureVFS) FullPathname(name string) (string, error) { return v.base.FullPathname(name) }

// captureFile is a main database file. Until a recorder is attached it only
// forwards; with one, every change to the file is reported to it, and the
// recorder turns the changes into a commit when SQLite releases its
// exclusive lock (which, in rollback-journal mode, is when a write
// transaction has either committed or rolled back).
//
// Every optional interface of the library's files is forwarded: a wrapper
// that hides one silently changes SQLite's behaviour (without shared
// memory, for instance, WAL mode cannot start).
type captureFile struct {
	vfs.File
	rec *recorder
}

func (f *captureFile) Unwrap() vfs.File { return f.File }

func (f *captureFile) WriteAt(p []byte, off int64) (int, error) {
	if f.rec != nil {
		f.rec.beforeWrite(f.File, off, off+int64(len(p)))
		defer f.rec.wrote(off, int64(len(p)))
	}
	return f.File.WriteAt(p, off)
}

func (f *captureFile) Truncate(size int64) error {
	if f.rec != nil {
		f.rec.beforeWrite(f.File, size, math.MaxInt64)
	}
	return f.File.Truncate(size)
}

func (f *captureFile) SizeHint(size int64) error {
	if f.rec != nil {
		f.rec.beforeChange(f.File)
	}
	return vfsutil.WrapSizeHint(f.File, size)
}

func (f *captureFile) Unlock(level vfs.LockLevel) error {
	if f.rec != nil {
		f.rec.finish(f.File)
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

// Batch-atomic brackets are forwarded. The recorder reads committed pages
// at the end of the transaction, so a batch the file system rolled back
// needs no special case (its pages read back unchanged); a committed batch
// is noted, because it does not advance the change counter.
func (f *captureFile) BeginAtomicWrite() error { return vfsutil.WrapBeginAtomicWrite(f.File) }
func (f *captureFile) CommitAtomicWrite() error {
	err := vfsutil.WrapCommitAtomicWrite(f.File)
	if err == nil && f.rec != nil {
		f.rec.batchCommitted()
	}
	return err
}
func (f *captureFile) RollbackAtomicWrite() error { return vfsutil.WrapRollbackAtomicWrite(f.File) }

// Plain forwarding of the remaining optional interfaces.

func (f *captureFile) LockState() vfs.LockLevel        { return vfsutil.WrapLockState(f.File) }
func (f *captureFile) PersistWAL() bool                { return vfsutil.WrapPersistWAL(f.File) }
func (f *captureFile) SetPersistWAL(keep bool)         { vfsutil.WrapSetPersistWAL(f.File, keep) }
func (f *captureFile) PowersafeOverwrite() bool        { return vfsutil.WrapPowersafeOverwrite(f.File) }
func (f *captureFile) SetPowersafeOverwrite(on bool)   { vfsutil.WrapSetPowersafeOverwrite(f.File, on) }
func (f *captureFile) ChunkSize(size int)              { vfsutil.WrapChunkSize(f.File, size) }
func (f *captureFile) HasMoved() (bool, error)         { return vfsutil.WrapHasMoved(f.File) }
func (f *captureFile) Overwrite() error                { return vfsutil.WrapOverwrite(f.File) }
func (f *captureFile) SyncSuper(super string) error    { return vfsutil.WrapSyncSuper(f.File, super) }
func (f *captureFile) CommitPhaseTwo() error           { return vfsutil.WrapCommitPhaseTwo(f.File) }
func (f *captureFile) CheckpointStart()                { vfsutil.WrapCheckpointStart(f.File) }
func (f *captureFile) CheckpointDone()                 { vfsutil.WrapCheckpointDone(f.File) }
func (f *captureFile) BusyHandler(handler func() bool) { vfsutil.WrapBusyHandler(f.File, handler) }
func (f *captureFile) SharedMemory() vfs.SharedMemory  { return vfsutil.WrapSharedMemory(f.File) }
func (f *captureFile) MemoryMapper() vfs.MemoryMapper  { return vfsutil.WrapMemoryMapper(f.File) }

func (f *captureFile) Pragma(name, value string) (string, error) {
	return vfsutil.WrapPragma(f.File, name, value)
}

// SetDB forwards the library's handle to its connection, which some files
// use (it has no exported interface of its own).
func (f *captureFile) SetDB(db any) {
	if s, ok := f.File.(interface{ SetDB(any) }); ok {
		s.SetDB(db)
	}
}

var (
	_ vfs.FileLockState          = (*captureFile)(nil)
	_ vfs.FilePersistWAL         = (*captureFile)(nil)
	_ vfs.FilePowersafeOverwrite = (*captureFile)(nil)
	_ vfs.FileChunkSize          = (*captureFile)(nil)
	_ vfs.FileSizeHint           = (*captureFile)(nil)
	_ vfs.FileHasMoved           = (*captureFile)(nil)
	_ vfs.FileOverwrite          = (*captureFile)(nil)
	_ vfs.FileSync               = (*captureFile)(nil)
	_ vfs.FileCommitPhaseTwo     = (*captureFile)(nil)
	_ vfs.FileBatchAtomicWrite   = (*captureFile)(nil)
	_ vfs.FileCheckpoint         = (*captureFile)(nil)
	_ vfs.FilePragma             = (*captureFile)(nil)
	_ vfs.FileBusyHandler        = (*captureFile)(nil)
	_ vfs.FileSharedMemory       = (*captureFile)(nil)
	_ vfs.FileMemoryMapper       = (*captureFile)(nil)
	_ vfs.FileUnwrap             = (*captureFile)(nil)
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
