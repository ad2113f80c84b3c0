//go:build unix

package fs

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/spf13/afero"
)

var errInjected = errors.New("injected fault")

// openHooked opens a store whose file system the test can break.
func openHooked(t *testing.T, dir string, opts ...Option) (*Store, *hookFs) {
	t.Helper()
	base, closeBase, err := osFs(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeBase() })
	h := &hookFs{Fs: base}
	return openT(t, dir, append([]Option{WithFs(h)}, opts...)...), h
}

// TestFailedWritesChangeNothing breaks a Put at each step before its
// rename: the error is not ambiguous, the object keeps its body, version
// and metadata for every reader, no temporary file is left, and the next
// write works.
func TestFailedWritesChangeNothing(t *testing.T) {
	const key = "cells/C:1/own.json"
	isData := func(newname string) bool { return newname == key }
	isRecord := func(newname string) bool { return strings.HasPrefix(newname, recordDir+"/") }
	steps := []struct {
		name    string
		sidecar bool // a step only the sidecar layout has
		arm     func(h *hookFs)
	}{
		{"sync of the body", false, func(h *hookFs) {
			h.fileSync = func(string, afero.File) error { return errInjected }
		}},
		{"temporary file creation", false, func(h *hookFs) {
			h.setBefore(func(op, name, _ string) error {
				if op == "open" && strings.HasPrefix(name, tmpDir+"/") {
					return errInjected
				}
				return nil
			})
		}},
		{"rename of the sidecar", true, func(h *hookFs) {
			h.setBefore(func(op, _, newname string) error {
				if op == "rename" && isRecord(newname) {
					return errInjected
				}
				return nil
			})
		}},
		{"sync of the sidecar's directory", true, func(h *hookFs) {
			h.setBefore(func(op, name, _ string) error {
				if op == "open" && strings.HasPrefix(name, recordDir+"/") && !strings.HasSuffix(name, ".json") {
					return errInjected
				}
				return nil
			})
		}},
		{"rename of the body (after the sidecar was replaced, if any)", false, func(h *hookFs) {
			h.setBefore(func(op, _, newname string) error {
				if op == "rename" && isData(newname) {
					return errInjected
				}
				return nil
			})
		}},
	}
	for _, layout := range layouts {
		for _, step := range steps {
			if step.sidecar && !layout.sidecars {
				continue
			}
			t.Run(layout.name+"/"+step.name, func(t *testing.T) {
				dir := t.TempDir()
				s, h := openHooked(t, dir, layout.opts...)
				md := map[string]string{"gen": "1"}
				v1 := putT(t, s, key, "first", store.PutOptions{Metadata: md})
				step.arm(h)
				for _, cond := range []store.Condition{{}, store.IfVersion(v1)} {
					_, err := s.Put(t.Context(), key, []byte("second"), store.PutOptions{Condition: cond, Metadata: map[string]string{"gen": "2"}})
					if !errors.Is(err, errInjected) || errors.Is(err, store.ErrAmbiguous) {
						t.Fatalf("put (%s) failing at the %s: %v, want the fault, not ambiguous", cond, step.name, err)
					}
				}
				h.setBefore(nil)
				h.fileSync = nil
				for _, r := range []*Store{s, openT(t, dir)} {
					o := getT(t, r, key)
					if string(o.Data) != "first" || o.Version != v1 || o.Metadata["gen"] != "1" {
						t.Fatalf("after the failed write: %q version %q metadata %v, want the first write", o.Data, o.Version, o.Metadata)
					}
					l := listAll(t, r, store.ListOptions{})
					if len(l.Objects) != 1 || l.Objects[0].Version != v1 {
						t.Fatalf("listing after the failed write: %+v", l.Objects)
					}
				}
				if n := countTemps(t, dir); n != 0 {
					t.Errorf("%d temporary files left", n)
				}
				v2 := putT(t, s, key, "third", store.PutOptions{Condition: store.IfVersion(v1)})
				if o := getT(t, s, key); o.Version != v2 || o.Metadata != nil {
					t.Fatalf("the next write: version %q metadata %v", o.Version, o.Metadata)
				}
			})
		}
	}
}

// layouts are the two ways a Put records versions: the object file's
// attribute (the default) and sidecars (WithSidecarRecords).
var layouts = []struct {
	name     string
	sidecars bool
	opts     []Option
}{{"attribute", false, nil}, {"sidecars", true, []Option{WithSidecarRecords()}}}

// TestFailureAfterTheRenameIsAmbiguous: once the body is renamed into
// place the write has happened; if the directory cannot then be synced,
// the caller hears "ambiguous", and a re-read finds the new object.
func TestFailureAfterTheRenameIsAmbiguous(t *testing.T) {
	const key = "a/b"
	dir := t.TempDir()
	s, h := openHooked(t, dir)
	v1 := putT(t, s, key, "first", store.PutOptions{})
	renamed := false
	h.after = func(op, _, newname string) {
		if op == "rename" && newname == key {
			renamed = true
		}
	}
	h.setBefore(func(op, name, _ string) error {
		if op == "open" && name == "a" && renamed {
			return errInjected
		}
		return nil
	})
	_, err := s.Put(t.Context(), key, []byte("second"), store.PutOptions{Condition: store.IfVersion(v1), Metadata: map[string]string{"gen": "2"}})
	if !errors.Is(err, store.ErrAmbiguous) || !errors.Is(err, errInjected) {
		t.Fatalf("put failing at the directory sync: %v, want ErrAmbiguous", err)
	}
	h.setBefore(nil)
	o := getT(t, s, key)
	if string(o.Data) != "second" || o.Version == v1 || o.Metadata["gen"] != "2" {
		t.Fatalf("after the ambiguous write: %q %q %v, want the second write", o.Data, o.Version, o.Metadata)
	}

	// The same for Delete: the file is gone when the sync fails.
	renamed = true
	h.setBefore(func(op, name, _ string) error {
		if op == "open" && name == "a" {
			return errInjected
		}
		return nil
	})
	if err := s.Delete(t.Context(), key); !errors.Is(err, store.ErrAmbiguous) {
		t.Fatalf("delete failing at the directory sync: %v, want ErrAmbiguous", err)
	}
	h.setBefore(nil)
	if _, err := s.Get(t.Context(), key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the ambiguous delete: %v, want ErrNotFound", err)
	}
}

func TestFailedDeleteChangesNothing(t *testing.T) {
	dir := t.TempDir()
	s, h := openHooked(t, dir)
	v := putT(t, s, "a/b", "keep", store.PutOptions{})
	h.setBefore(func(op, name, _ string) error {
		if op == "remove" && name == "a/b" {
			return syscall.EIO
		}
		return nil
	})
	err := s.Delete(t.Context(), "a/b")
	if !errors.Is(err, syscall.EIO) || errors.Is(err, store.ErrAmbiguous) {
		t.Fatalf("delete failing at the unlink: %v", err)
	}
	h.setBefore(nil)
	if o := getT(t, s, "a/b"); o.Version != v {
		t.Fatalf("after the failed delete: %q", o.Version)
	}
}

// TestCrashBetweenSidecarAndRename leaves the state a writer killed
// between its two renames leaves (the sidecar names a file that never
// arrived, the temporary file remains): readers still see the old object
// with its version and metadata, and the next writer proceeds on that
// version.
func TestCrashBetweenSidecarAndRename(t *testing.T) {
	dir := t.TempDir()
	s, h := openHooked(t, dir, WithSidecarRecords())
	v1 := putT(t, s, "k", "old", store.PutOptions{Metadata: map[string]string{"gen": "1"}})
	h.setBefore(func(op, _, newname string) error {
		if op == "rename" && newname == "k" {
			return errInjected // the "crash": the body never arrives
		}
		return nil
	})
	// Keep the temporary file, as a killed writer would.
	h.Fs = &keepTemps{Fs: h.Fs}
	if _, err := s.Put(t.Context(), "k", []byte("never"), store.PutOptions{Metadata: map[string]string{"gen": "2"}}); !errors.Is(err, errInjected) {
		t.Fatal(err)
	}
	h.setBefore(nil)
	if n := countTemps(t, dir); n != 1 {
		t.Fatalf("%d temporary files, want the crashed writer's 1", n)
	}
	raw, err := os.ReadFile(dir + "/" + recordPath("k"))
	if err != nil || !strings.Contains(string(raw), `"prev"`) {
		t.Fatalf("sidecar %s (%v) should name the unpublished file and keep the current one", raw, err)
	}
	r := openT(t, dir)
	o := getT(t, r, "k")
	if string(o.Data) != "old" || o.Version != v1 || o.Metadata["gen"] != "1" {
		t.Fatalf("after the crash: %q %q %v", o.Data, o.Version, o.Metadata)
	}
	v3 := putT(t, r, "k", "next", store.PutOptions{Condition: store.IfVersion(v1)})
	if o := getT(t, s, "k"); o.Version != v3 || string(o.Data) != "next" {
		t.Fatalf("the next writer: %q %q", o.Data, o.Version)
	}
}

// keepTemps ignores removals of temporary files.
type keepTemps struct{ afero.Fs }

func (k *keepTemps) Remove(name string) error {
	if strings.HasPrefix(name, tmpDir+"/") {
		return nil
	}
	return k.Fs.Remove(name)
}

// TestCancelDuringAWrite ends the context while the new sidecar is being
// published: the write stops before the rename that would apply it, so it
// returns the context's error (not ambiguous) and changes nothing.
func TestCancelDuringAWrite(t *testing.T) {
	dir := t.TempDir()
	s, h := openHooked(t, dir, WithSidecarRecords())
	v1 := putT(t, s, "k", "old", store.PutOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	h.setBefore(func(op, _, newname string) error {
		if op == "rename" && strings.HasPrefix(newname, recordDir+"/") {
			cancel()
		}
		return nil
	})
	_, err := s.Put(ctx, "k", []byte("new"), store.PutOptions{Condition: store.IfVersion(v1)})
	if !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrAmbiguous) {
		t.Fatalf("put cancelled mid-way: %v, want context.Canceled", err)
	}
	h.setBefore(nil)
	if o := getT(t, s, "k"); string(o.Data) != "old" || o.Version != v1 {
		t.Fatalf("after the cancelled write: %q %q", o.Data, o.Version)
	}
	if n := countTemps(t, dir); n != 0 {
		t.Fatalf("%d temporary files left", n)
	}
}
