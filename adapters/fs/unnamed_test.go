//go:build linux

package fs

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/spf13/afero"
)

// openUnnamedHooked opens a store that writes new keys as unnamed files,
// through a file system the test can break and watch.
func openUnnamedHooked(t *testing.T) (*Store, *hookFs, string) {
	t.Helper()
	dir := t.TempDir()
	if !attrsWork(t, dir) {
		t.Skip("no user extended attributes: new keys are not linked")
	}
	base, closeBase, err := osFs(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeBase() })
	h := &hookFs{Fs: base, unnamed: true}
	return openT(t, dir, WithFs(h)), h, dir
}

// opsOf records the data operations (outside the store's directory).
func opsOf(h *hookFs) func() []string {
	var mu sync.Mutex
	var ops []string
	h.setBefore(func(op, name, newname string) error {
		if op == "rename" || op == "link" {
			name = newname
		}
		if !strings.HasPrefix(name, metaDir+"/") && (op == "rename" || op == "link") {
			mu.Lock()
			ops = append(ops, op+" "+name)
			mu.Unlock()
		}
		return nil
	})
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), ops...) }
}

// TestNewKeyIsLinkedReplacedKeyRenamed: a Put creating a key in an existing
// directory links its file there, with no temporary name; one replacing
// an object (the link finds the name taken) renames; a create-only Put on
// a taken key fails and leaves nothing; a key in a new directory is
// renamed into it.
func TestNewKeyIsLinkedReplacedKeyRenamed(t *testing.T) {
	s, h, dir := openUnnamedHooked(t)
	putT(t, s, "d/first", "1", store.PutOptions{}) // makes d
	ops := opsOf(h)
	v := putT(t, s, "d/k", "new", store.PutOptions{Condition: store.IfAbsent})
	putT(t, s, "d/u", "new", store.PutOptions{})
	if got := ops(); strings.Join(got, ",") != "link d/k,link d/u" {
		t.Fatalf("creating two keys did %q", got)
	}
	if _, err := s.Put(t.Context(), "d/k", []byte("again"), store.PutOptions{Condition: store.IfAbsent}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("create-only on a taken key: %v", err)
	}
	if o := getT(t, s, "d/k"); string(o.Data) != "new" || o.Version != v {
		t.Fatalf("after the refused create: %q %q", o.Data, o.Version)
	}
	v2 := putT(t, s, "d/k", "replaced", store.PutOptions{Metadata: map[string]string{"m": "1"}})
	if o := getT(t, s, "d/k"); string(o.Data) != "replaced" || o.Version != v2 || o.Metadata["m"] != "1" {
		t.Fatalf("after the replacing put: %q %q %v", o.Data, o.Version, o.Metadata)
	}
	putT(t, s, "e/k", "new dir", store.PutOptions{})
	// The first rename into e finds no directory; the second follows mkdir.
	want := "link d/k,link d/u,link d/k,link d/k,rename d/k,rename e/k,rename e/k"
	if got := ops(); strings.Join(got, ",") != want {
		t.Fatalf("operations %q, want %q", got, want)
	}
	if n := countTemps(t, dir); n != 0 {
		t.Fatalf("%d temporary files left", n)
	}
}

// TestFailedNewKeyWritesChangeNothing breaks a Put of a new key before its
// link: the error is definite (not ambiguous), the key does not exist, no
// file is left, and the next write works. A failed directory sync after
// the link is ambiguous and the object is there.
func TestFailedNewKeyWritesChangeNothing(t *testing.T) {
	const key = "d/k"
	for _, step := range []struct {
		name string
		arm  func(h *hookFs, cancel func())
	}{
		{"sync of the body", func(h *hookFs, _ func()) {
			h.fileSync = func(string, afero.File) error { return errInjected }
		}},
		{"link", func(h *hookFs, _ func()) {
			h.setBefore(func(op, _, newname string) error {
				if op == "link" && newname == key {
					return errInjected
				}
				return nil
			})
		}},
		{"cancel before the link", func(h *hookFs, cancel func()) {
			h.fileSync = func(_ string, f afero.File) error { cancel(); return f.Sync() }
		}},
	} {
		t.Run(step.name, func(t *testing.T) {
			s, h, dir := openUnnamedHooked(t)
			putT(t, s, "d/first", "1", store.PutOptions{})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			step.arm(h, cancel)
			for _, cond := range []store.Condition{{}, store.IfAbsent} {
				_, err := s.Put(ctx, key, []byte("new"), store.PutOptions{Condition: cond})
				if err == nil || errors.Is(err, store.ErrAmbiguous) {
					t.Fatalf("put (%s) failing at the %s: %v, want a definite failure", cond, step.name, err)
				}
			}
			h.setBefore(nil)
			h.fileSync = nil
			if _, err := s.Get(t.Context(), key); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("after the failed write: %v", err)
			}
			if n := countTemps(t, dir); n != 0 {
				t.Fatalf("%d temporary files left", n)
			}
			if l := listAll(t, s, store.ListOptions{}); len(l.Objects) != 1 {
				t.Fatalf("listing %+v", l.Objects)
			}
			v := putT(t, s, key, "next", store.PutOptions{Condition: store.IfAbsent})
			if o := getT(t, s, key); o.Version != v || string(o.Data) != "next" {
				t.Fatalf("the next write: %q %q", o.Data, o.Version)
			}
		})
	}

	t.Run("sync of the directory", func(t *testing.T) {
		s, h, _ := openUnnamedHooked(t)
		putT(t, s, "d/first", "1", store.PutOptions{})
		linked := false
		h.after = func(op, _, newname string) {
			if op == "link" && newname == key {
				linked = true
			}
		}
		// The directory was opened before the link; its fsync fails.
		h.fileSync = nil
		base := h.Fs
		h.Fs = &failDirSync{Fs: base, dir: "d", armed: &linked}
		_, err := s.Put(t.Context(), key, []byte("new"), store.PutOptions{Condition: store.IfAbsent})
		if !errors.Is(err, store.ErrAmbiguous) || !errors.Is(err, errInjected) {
			t.Fatalf("put failing at the directory sync: %v, want ErrAmbiguous", err)
		}
		h.Fs = base
		if o := getT(t, s, key); string(o.Data) != "new" {
			t.Fatalf("after the ambiguous write: %q", o.Data)
		}
	})
}

// failDirSync fails the fsync of directory dir once *armed is set.
type failDirSync struct {
	afero.Fs
	dir   string
	armed *bool
}

func (f *failDirSync) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	file, err := f.Fs.OpenFile(name, flag, perm)
	if err != nil || name != f.dir {
		return file, err
	}
	return &failingSync{File: file, armed: f.armed}, nil
}

func (f *failDirSync) openUnnamed(dir afero.File, perm os.FileMode) (afero.File, error) {
	if fs, ok := dir.(*failingSync); ok {
		dir = fs.File
	}
	return f.Fs.(unnamedFs).openUnnamed(dir, perm)
}

func (f *failDirSync) linkUnnamed(file, dir afero.File, name string) error {
	if fs, ok := dir.(*failingSync); ok {
		dir = fs.File
	}
	return f.Fs.(unnamedFs).linkUnnamed(file, dir, name)
}

type failingSync struct {
	afero.File
	armed *bool
}

func (f *failingSync) Sync() error {
	if *f.armed {
		return errInjected
	}
	return f.File.Sync()
}

func (f *failingSync) Fd() uintptr { return f.File.(fder).Fd() }
