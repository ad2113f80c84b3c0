//go:build unix

package fs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// syncCounter counts every fsync made through it, of files and directories.
type syncCounter struct {
	afero.Fs
	n atomic.Int64
}

func (c *syncCounter) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := c.Fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &countedFile{File: f, n: &c.n}, nil
}

func (c *syncCounter) Open(name string) (afero.File, error) { return c.OpenFile(name, os.O_RDONLY, 0) }

func uncounted(f afero.File) afero.File {
	if cf, ok := f.(*countedFile); ok {
		return cf.File
	}
	return f
}

func (c *syncCounter) openUnnamed(dir afero.File, perm os.FileMode) (afero.File, error) {
	u, ok := c.Fs.(unnamedFs)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	f, err := u.openUnnamed(uncounted(dir), perm)
	if err != nil {
		return nil, err
	}
	return &countedFile{File: f, n: &c.n}, nil
}

func (c *syncCounter) linkUnnamed(f, dir afero.File, name string) error {
	return c.Fs.(unnamedFs).linkUnnamed(uncounted(f), uncounted(dir), name)
}

type countedFile struct {
	afero.File
	n *atomic.Int64
}

func (f *countedFile) Sync() error { f.n.Add(1); return f.File.Sync() }

// Fd and SyscallConn keep flock and the record attribute working.
func (f *countedFile) Fd() uintptr { return f.File.(interface{ Fd() uintptr }).Fd() }

func (f *countedFile) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := f.File.(interface {
		SyscallConn() (syscall.RawConn, error)
	}); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

func openCounted(t testing.TB, dir string, opts ...Option) (*Store, *syncCounter) {
	t.Helper()
	base, closeBase, err := osFs(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeBase() })
	c := &syncCounter{Fs: base}
	s, err := Open(dir, append([]Option{WithFs(c)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, c
}

// attrsWork reports whether the file system under dir keeps user
// extended attributes.
func attrsWork(t testing.TB, dir string) bool {
	p := filepath.Join(dir, "probe")
	if err := os.WriteFile(p, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(p)
	return unix.Setxattr(p, "user.cellb.probe", []byte("x"), 0) == nil
}

// TestPutSyncsTwice: replacing an object costs two fsyncs, the file's and
// its directory's, with the record in the file's attribute; the sidecar
// layout pays four.
func TestPutSyncsTwice(t *testing.T) {
	dir := t.TempDir()
	if !attrsWork(t, dir) {
		t.Skip("the temporary directory's file system has no user extended attributes")
	}
	for _, c := range []struct {
		layout string
		opts   []Option
		want   int64
	}{{"attribute", nil, 2}, {"sidecars", []Option{WithSidecarRecords()}, 4}} {
		s, n := openCounted(t, t.TempDir(), c.opts...)
		const key = "cells/C:1/own.json"
		v := putT(t, s, key, "first", store.PutOptions{})
		for i := range 3 {
			n.n.Store(0)
			v = putT(t, s, key, "next", store.PutOptions{Condition: store.IfVersion(v), Metadata: map[string]string{"i": string(rune('0' + i))}})
			if got := n.n.Load(); got != c.want {
				t.Errorf("%s: a replacing Put made %d fsyncs, want %d", c.layout, got, c.want)
			}
		}
		if o := getT(t, s, key); o.Version != v || o.Metadata["i"] != "2" {
			t.Errorf("%s: read %q %v after the puts", c.layout, o.Version, o.Metadata)
		}
		if c.layout != "attribute" {
			continue // a new key's sidecar may need a new directory too
		}
		// A new key in the same directory: the unnamed file's fsync and
		// the directory's.
		for i, cond := range []store.Condition{{}, store.IfAbsent} {
			n.n.Store(0)
			putT(t, s, fmt.Sprintf("cells/C:1/new-%d", i), "new", store.PutOptions{Condition: cond})
			if got := n.n.Load(); got != c.want {
				t.Errorf("%s: a Put of a new key (%s) made %d fsyncs, want %d", c.layout, cond, got, c.want)
			}
		}
	}
}

// TestLayoutsReadEachOther: objects written with sidecars (as earlier
// versions of the package wrote them) read with their versions and
// metadata in a default store, which writes on those versions; and a
// store writing sidecars reads objects recorded in attributes.
func TestLayoutsReadEachOther(t *testing.T) {
	dir := t.TempDir()
	if !attrsWork(t, dir) {
		t.Skip("the temporary directory's file system has no user extended attributes")
	}
	old := openT(t, dir, WithSidecarRecords())
	md := map[string]string{"gen": "1"}
	v1 := putT(t, old, "a/k", "old", store.PutOptions{Metadata: md})
	if _, err := os.Stat(filepath.Join(dir, recordPath("a/k"))); err != nil {
		t.Fatalf("the sidecar layout wrote no sidecar: %v", err)
	}
	cur := openT(t, dir)
	o := getT(t, cur, "a/k")
	if string(o.Data) != "old" || o.Version != v1 || o.Metadata["gen"] != "1" {
		t.Fatalf("a sidecar object read by a default store: %q %q %v", o.Data, o.Version, o.Metadata)
	}
	v2 := putT(t, cur, "a/k", "new", store.PutOptions{Condition: store.IfVersion(v1), Metadata: map[string]string{"gen": "2"}})
	if _, err := unix.Getxattr(filepath.Join(dir, "a/k"), attrName, make([]byte, 4096)); err != nil {
		t.Fatalf("the default store wrote no record attribute: %v", err)
	}
	for _, r := range []*Store{old, cur, openT(t, dir)} {
		o := getT(t, r, "a/k")
		if string(o.Data) != "new" || o.Version != v2 || o.Metadata["gen"] != "2" {
			t.Fatalf("an attribute object: %q %q %v", o.Data, o.Version, o.Metadata)
		}
		l := listAll(t, r, store.ListOptions{})
		if len(l.Objects) != 1 || l.Objects[0].Version != v2 {
			t.Fatalf("listing: %+v", l.Objects)
		}
	}
	// The object file itself is still the plain body.
	if b, _ := os.ReadFile(filepath.Join(dir, "a/k")); string(b) != "new" {
		t.Fatalf("the object file holds %q", b)
	}
	// A program rewriting the file in place keeps the attribute but
	// changes the file: the attribute no longer speaks for it.
	if err := os.WriteFile(filepath.Join(dir, "a/k"), []byte("edited in place"), 0o666); err != nil {
		t.Fatal(err)
	}
	if o := getT(t, cur, "a/k"); o.Version == v2 || o.Metadata != nil {
		t.Fatalf("a file rewritten in place kept the record: %q %v", o.Version, o.Metadata)
	}
}

// BenchmarkPutFsyncs reports the fsyncs of one replacing Put of a 1 KiB
// object in each layout (fsyncs/op), beside its time.
func BenchmarkPutFsyncs(b *testing.B) {
	for _, c := range []struct {
		layout string
		opts   []Option
	}{{"attribute", nil}, {"sidecars", []Option{WithSidecarRecords()}}} {
		b.Run(c.layout, func(b *testing.B) {
			s, n := openCounted(b, b.TempDir(), c.opts...)
			body := make([]byte, 1<<10)
			const key = "cells/Counter:0123456789abcdef/own.json"
			if _, err := s.Put(b.Context(), key, body, store.PutOptions{}); err != nil {
				b.Fatal(err)
			}
			n.n.Store(0)
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := s.Put(b.Context(), key, body, store.PutOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n.n.Load())/float64(b.N), "fsyncs/op")
		})
	}
}
