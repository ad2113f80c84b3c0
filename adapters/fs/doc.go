// Package fs is a store.Store on a directory of the local file system.
//
// A key is a real path below the directory: the object
// "cells/Counter:abc/own.json" is the file root/cells/Counter:abc/own.json,
// holding exactly the object's bytes, so a bucket can be read, copied and
// laid out with ordinary tools. Open("/var/lib/cellb/bucket") gives a Store
// that any number of goroutines and processes on the machine may share.
//
// # What it promises
//
//   - A Put is durable when it returns: the body is written to a file
//     that no reader can see and fsynced, published under the key's path
//     whole, and the directory is fsynced. A Put that creates a key in a
//     directory that exists writes an unnamed file there (O_TMPFILE, on
//     Linux) and links it under the key, which refuses a taken name;
//     otherwise the file is a temporary one, renamed over the key's path.
//     Readers see the old object or the new one, never part of one, and a
//     crash at any moment leaves every object whole.
//   - Writers in one directory share its fsyncs: each waits for one that
//     began after its own link, rename or unlink, so concurrent Puts and
//     Deletes there cost fewer directory fsyncs than there are callers.
//   - Create-only and compare-and-swap Puts, unconditional Puts and Deletes
//     of one key are serialised across processes by flock(2), which the
//     kernel releases when a process dies, even by SIGKILL.
//   - Every write gets a fresh random version, even when the body repeats.
//   - Get and List take no lock (except, rarely, when writers keep
//     replacing the object they are reading).
//   - List is in byte order of the full keys, with prefixes, delimiters and
//     continuation tokens, and sees every write that returned.
//   - No operation touches a file outside the directory. Keys are checked
//     with store.ValidateKey; on Linux every path is then resolved by the
//     kernel beneath the directory with openat2(2), refusing "..", absolute
//     paths and symbolic links (ErrSymlink). Elsewhere os.Root confines
//     paths to the directory but follows links that stay inside it.
//
// # Where versions and metadata live
//
// A Put records the key, a fresh version, the metadata and the identity of
// the file it wrote (inode number, size and modification time) in the
// file's extended attribute "user.cellb.object", set before the file is
// fsynced: the record is durable with the body and published by the same
// link or rename, so a Put costs two fsyncs, the file's and its
// directory's. The object file stays the plain body. A record without
// metadata or content headers is a compact binary value (about 54 bytes:
// the key's hash, the identity, the version) that ext4 keeps inside the
// inode; one with them is JSON, which may take an attribute block. Versions
// of this package before the compact record read it as malformed and see
// such an object as foreign: while they share a directory, use
// WithSidecarRecords.
//
// Where the attribute cannot be set (a file system without user extended
// attributes, a record too large for the inode, an injected file system
// whose files have no descriptor) or with WithSidecarRecords, the record
// goes to a sidecar file instead, as before the attribute existed: the
// directory ".cellb-meta" at the root holds the store's own files — sidecar
// records, the lock files and named temporary files — and a sidecar names both
// the file the last writer published and the one it replaced, and is made
// durable before the rename (four fsyncs per Put). No key may start with
// that segment (in any letter case) and listings skip it. Readers take the
// attribute first, then the sidecar, each only while the file still has
// the identity it records, so buckets written with sidecars still read.
//
// A file that no attribute or sidecar describes (copied in, or edited in place, by
// another program) is still an object: its version is derived from its
// identity, and it has no metadata.
//
// # What it uses besides afero
//
// Files are read and written through github.com/spf13/afero (WithFs
// replaces the file system, for example to inject faults in tests). Two
// things afero cannot express come from golang.org/x/sys/unix: flock(2)
// locks that die with their process, and, on Linux, openat2(2) with
// RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS, O_TMPFILE and linkat(2) for the
// default file system.
//
// # What it does not promise
//
// It is made for one machine and a local file system (ext4, XFS, btrfs,
// APFS, tmpfs). Network file systems (NFS, SMB, many FUSE systems) differ
// in how they honour flock, rename, fsync and inode numbers, and several
// machines sharing one directory are not supported. A directory cannot
// hold both an object "a" and an object "a/b" (ErrKeyConflict). Programs
// that write into the directory without this package are not locked out;
// only replacing files by rename keeps readers safe from them. See
// docs/adapters-fs.md.
package fs
