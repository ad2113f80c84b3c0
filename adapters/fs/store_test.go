//go:build unix

package fs

import (
	"bytes"
	"context"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/store"
	"github.com/spf13/afero"
)

func openT(t *testing.T, dir string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func putT(t *testing.T, s store.Store, key string, body string, opts store.PutOptions) store.Version {
	t.Helper()
	v, err := s.Put(t.Context(), key, []byte(body), opts)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return v
}

func getT(t *testing.T, s store.Store, key string) *store.Object {
	t.Helper()
	o, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return o
}

// tree maps every path below dir (except the store's own directory) to its
// content, or to "/" for a directory and "-> target" for a link.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Name() == metaDir && d.IsDir() {
			out[rel] = "/"
			return filepath.SkipDir
		}
		switch {
		case d.Type()&iofs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + target
		case d.IsDir():
			out[rel] = "/"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func listAll(t *testing.T, s store.Store, opts store.ListOptions) store.ListPage {
	t.Helper()
	p, err := store.ListAll(t.Context(), s, opts)
	if err != nil {
		t.Fatalf("list %+v: %v", opts, err)
	}
	return p
}

func keysOf(p store.ListPage) []string {
	var out []string
	for _, o := range p.Objects {
		out = append(out, o.Key)
	}
	return out
}

func TestKeyIsARealPath(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	key := "cells/Counter:abc/own.json"
	body := `{"node":"n1","epoch":7}`
	putT(t, s, key, body, store.PutOptions{Condition: store.IfAbsent})
	got, err := os.ReadFile(filepath.Join(dir, "cells", "Counter:abc", "own.json"))
	if err != nil || string(got) != body {
		t.Fatalf("the file at the key's path holds %q (%v), want %q", got, err, body)
	}
	want := map[string]string{".": "/", metaDir: "/", "cells": "/", "cells/Counter:abc": "/", "cells/Counter:abc/own.json": body}
	if got := tree(t, dir); !mapsEqual(got, want) {
		t.Fatalf("directory holds %q, want %q", got, want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestVersionChangesForAnEqualBody(t *testing.T) {
	s := openT(t, t.TempDir())
	seen := map[store.Version]bool{}
	var versions []store.Version
	for range 5 {
		v := putT(t, s, "k", "same body", store.PutOptions{})
		if seen[v] {
			t.Fatalf("version %q repeated for a rewrite of an equal body", v)
		}
		seen[v] = true
		versions = append(versions, v)
	}
	_, err := s.Put(t.Context(), "k", []byte("same body"), store.PutOptions{Condition: store.IfVersion(versions[3])})
	if !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("a swap on the previous version of an equal body: %v, want ErrPreconditionFailed", err)
	}
	if o := getT(t, s, "k"); o.Version != versions[4] {
		t.Fatalf("get reports %q, want %q", o.Version, versions[4])
	}
}

// TestForeignFilesAreObjects: files put there by other programs are
// objects with a version derived from the file, which changes when the file
// does and can be swapped on.
func TestForeignFilesAreObjects(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	if err := os.MkdirAll(filepath.Join(dir, "imported"), 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "imported", "a.txt")
	if err := os.WriteFile(path, []byte("by hand"), 0o666); err != nil {
		t.Fatal(err)
	}
	o := getT(t, s, "imported/a.txt")
	if string(o.Data) != "by hand" || o.Version == "" || o.Metadata != nil {
		t.Fatalf("foreign file read as %q version %q metadata %v", o.Data, o.Version, o.Metadata)
	}
	l := listAll(t, s, store.ListOptions{})
	if len(l.Objects) != 1 || l.Objects[0].Version != o.Version || l.Objects[0].Size != 7 {
		t.Fatalf("listing %+v, want the file with version %q", l.Objects, o.Version)
	}
	// Edited in place by another program: a new version.
	if err := os.WriteFile(path, []byte("edited by hand"), 0o666); err != nil {
		t.Fatal(err)
	}
	o2 := getT(t, s, "imported/a.txt")
	if o2.Version == o.Version || string(o2.Data) != "edited by hand" {
		t.Fatalf("after an edit: %q version %q (before: %q)", o2.Data, o2.Version, o.Version)
	}
	if _, err := s.Put(t.Context(), "imported/a.txt", []byte("x"), store.PutOptions{Condition: store.IfVersion(o.Version)}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("swap on the pre-edit version: %v", err)
	}
	v3 := putT(t, s, "imported/a.txt", "now ours", store.PutOptions{Condition: store.IfVersion(o2.Version), Metadata: map[string]string{"m": "1"}})
	if o3 := getT(t, s, "imported/a.txt"); o3.Version != v3 || o3.Metadata["m"] != "1" {
		t.Fatalf("after the swap: version %q metadata %v, want %q", o3.Version, o3.Metadata, v3)
	}
}

func TestMetadataSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	md := map[string]string{"litestream-timestamp": "2026-01-02T03:04:05Z", "sha256": strings.Repeat("ab", 32)}
	v := putT(t, s, "deploy-blobs/x", "blob", store.PutOptions{Metadata: md})
	s.Close()
	o := getT(t, openT(t, dir), "deploy-blobs/x")
	if o.Version != v || !mapsEqual(o.Metadata, md) {
		t.Fatalf("after reopening: version %q metadata %v, want %q %v", o.Version, o.Metadata, v, md)
	}
}

// TestInvalidKeysTouchNothing: bad keys are refused with ErrInvalidKey
// before any file is touched, inside the root or next to it.
func TestInvalidKeysTouchNothing(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "bucket")
	for _, d := range []string{root, filepath.Join(parent, "outside")} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(parent, "outside", "x"), []byte("keep"), 0o666); err != nil {
		t.Fatal(err)
	}
	s := openT(t, root)
	before := tree(t, parent)
	bad := []string{
		"", "../outside/x", "../../etc/passwd", "/etc/passwd", "a/../../outside/x", "a\x00b", "a//b", "./a", "a/./b",
		"a/", "a\\b", "..\\outside", strings.Repeat("s", 256), "ok/" + strings.Repeat("s", 256),
		metaDir + "/tmp/x", strings.ToUpper(metaDir) + "/x", metaDir, "\xff\xfe", strings.Repeat("a/", 600) + "a",
	}
	ctx := t.Context()
	for _, k := range bad {
		_, err := s.Put(ctx, k, []byte("evil"), store.PutOptions{})
		checkInvalid(t, "put", k, err)
		_, err = s.Put(ctx, k, []byte("evil"), store.PutOptions{Condition: store.IfAbsent})
		checkInvalid(t, "create-only put", k, err)
		_, err = s.Get(ctx, k)
		checkInvalid(t, "get", k, err)
		checkInvalid(t, "delete", k, s.Delete(ctx, k))
	}
	for _, p := range []string{"../", "/a", "a//", "..", metaDir + "x//"} {
		_, err := s.List(ctx, store.ListOptions{Prefix: p})
		checkInvalid(t, "list", p, err)
	}
	if after := tree(t, parent); !mapsEqual(before, after) {
		t.Fatalf("refused keys changed the file system:\nbefore %q\nafter  %q", before, after)
	}
	if _, err := os.Stat(filepath.Join(root, metaDir)); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("refused writes created the store's directory: %v", err)
	}
}

func checkInvalid(t *testing.T, op, key string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("%s %q: %v, want ErrInvalidKey", op, key, err)
	}
}

// TestSymlinksAreRefused: the default file system follows no link, so no
// key reaches outside the root, and no two keys share a file.
func TestSymlinksAreRefused(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "bucket")
	outside := filepath.Join(parent, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "real")} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o666); err != nil {
		t.Fatal(err)
	}
	s := openT(t, root)
	putT(t, s, "real/obj", "inside", store.PutOptions{})
	links := map[string]string{
		"out":         outside,                          // absolute, leaves the root
		"up":          "../outside",                     // relative, leaves the root
		"alias":       "real",                           // a directory inside the root
		"file":        "real/obj",                       // a file inside the root
		"real/secret": filepath.Join(outside, "secret"), // last component leaves the root
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	before := tree(t, parent)
	ctx := t.Context()
	for _, k := range []string{"out/secret", "up/secret", "alias/obj", "file", "real/secret", "out/new", "up/sub/new", "alias/new"} {
		_, err := s.Get(ctx, k)
		checkSymlink(t, "get", k, err)
		_, err = s.Put(ctx, k, []byte("evil"), store.PutOptions{})
		checkSymlink(t, "put", k, err)
		checkSymlink(t, "delete", k, s.Delete(ctx, k))
	}
	if after := tree(t, parent); !mapsEqual(before, after) {
		t.Fatalf("operations through links changed the file system:\nbefore %q\nafter  %q", before, after)
	}
	if got := keysOf(listAll(t, s, store.ListOptions{})); !slices.Equal(got, []string{"real/obj"}) {
		t.Fatalf("listing shows %q, want only real/obj (links are not objects)", got)
	}
}

func checkSymlink(t *testing.T, op, key string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrInvalidKey) || !errors.Is(err, ErrSymlink) {
		t.Errorf("%s %q: %v, want ErrInvalidKey and ErrSymlink", op, key, err)
	}
}

func TestDeleteRemovesEmptyParents(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	ctx := t.Context()
	putT(t, s, "a/b/c/d", "deep", store.PutOptions{})
	putT(t, s, "a/x", "shallow", store.PutOptions{})
	if err := s.Delete(ctx, "a/b/c/d"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{".": "/", metaDir: "/", "a": "/", "a/x": "shallow"}
	if got := tree(t, dir); !mapsEqual(got, want) {
		t.Fatalf("after deleting a/b/c/d: %q, want %q", got, want)
	}
	// A directory is not an object: deleting its name changes nothing.
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatalf("delete of a directory's name: %v", err)
	}
	if err := s.Delete(ctx, "a/x"); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{".": "/", metaDir: "/"}
	if got := tree(t, dir); !mapsEqual(got, want) {
		t.Fatalf("after deleting everything: %q, want %q", got, want)
	}
	for range 2 {
		if err := s.Delete(ctx, "never/was"); err != nil {
			t.Fatalf("delete of a missing key: %v", err)
		}
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the root itself went: %v", err)
	}
}

func TestNestedKeysAreRefusedCleanly(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	ctx := t.Context()
	putT(t, s, "x", "file", store.PutOptions{})
	_, err := s.Put(ctx, "x/y", []byte("below"), store.PutOptions{})
	if !errors.Is(err, store.ErrInvalidKey) || !errors.Is(err, ErrKeyConflict) {
		t.Fatalf("put x/y below the object x: %v, want ErrInvalidKey and ErrKeyConflict", err)
	}
	putT(t, s, "p/q", "deep", store.PutOptions{})
	_, err = s.Put(ctx, "p", []byte("above"), store.PutOptions{Condition: store.IfAbsent})
	if !errors.Is(err, ErrKeyConflict) {
		t.Fatalf("put p above the object p/q: %v, want ErrKeyConflict", err)
	}
	if _, err := s.Get(ctx, "x/y"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get x/y: %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "p"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get p: %v, want ErrNotFound", err)
	}
	// An empty directory (left by another program) gives way to an object.
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o777); err != nil {
		t.Fatal(err)
	}
	putT(t, s, "empty", "now a file", store.PutOptions{Condition: store.IfAbsent})
}

func TestTemporaryFilesAreInvisibleAndSwept(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	v := putT(t, s, "k", "whole", store.PutOptions{})
	old := filepath.Join(dir, tmpDir, "CRASHED.tmp")
	young := filepath.Join(dir, tmpDir, "INFLIGHT.tmp")
	for _, p := range []string{old, young} {
		if err := os.WriteFile(p, []byte("torn"), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * DefaultTempExpiry)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(listAll(t, s, store.ListOptions{})); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("listing %q, want only k", got)
	}
	if o := getT(t, s, "k"); string(o.Data) != "whole" || o.Version != v {
		t.Fatalf("get: %q %q", o.Data, o.Version)
	}
	openT(t, dir) // sweeps on open
	if _, err := os.Stat(old); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("an expired temporary file survived Open: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a young temporary file (maybe a live writer's) was removed: %v", err)
	}
	openT(t, dir, WithTempExpiry(-1), WithLogger(nil))
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a disabled sweep removed a file: %v", err)
	}
}

func TestCancelledContextChangesNothing(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Put(ctx, "k", []byte("x"), store.PutOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("put: %v", err)
	}
	_, err = s.Get(ctx, "k")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("get: %v", err)
	}
	if err := s.Delete(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("delete: %v", err)
	}
	if _, err := s.List(ctx, store.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("list: %v", err)
	}
	if got := tree(t, dir); len(got) != 1 {
		t.Fatalf("cancelled calls wrote %q", got)
	}
}

// TestCancelWhileWaitingForTheLock: a writer queued behind another
// process's lock gives up when its context ends, writes nothing, and the
// stripe works again once the holder lets go.
func TestCancelWhileWaitingForTheLock(t *testing.T) {
	dir := t.TempDir()
	holder, waiter := openT(t, dir), openT(t, dir)
	v := putT(t, waiter, "k", "before", store.PutOptions{})
	unlock, err := holder.d.locks.lock(t.Context(), stripeOf("k"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range []store.Condition{{}, store.IfVersion(v)} {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		_, err = waiter.Put(ctx, "k", []byte("never"), store.PutOptions{Condition: cond})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrAmbiguous) {
			t.Fatalf("put behind a held lock: %v, want DeadlineExceeded and not ambiguous", err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	err = waiter.Delete(ctx, "k")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("delete behind a held lock: %v", err)
	}
	if o := getT(t, waiter, "k"); string(o.Data) != "before" || o.Version != v {
		t.Fatalf("reads must not wait for the lock, and see the old object: %q %q", o.Data, o.Version)
	}
	if l := listAll(t, waiter, store.ListOptions{}); len(l.Objects) != 1 || l.Objects[0].Version != v {
		t.Fatalf("listings must not wait for the lock, and see the old object: %+v", l.Objects)
	}
	unlock()
	v2 := putT(t, waiter, "k", "after", store.PutOptions{Condition: store.IfVersion(v)})
	if o := getT(t, holder, "k"); o.Version != v2 {
		t.Fatalf("after the lock was released: %q, want %q", o.Version, v2)
	}
	if n := countTemps(t, dir); n != 0 {
		t.Fatalf("%d temporary files left by cancelled writes", n)
	}
}

func countTemps(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, tmpDir))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func TestClose(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	putT(t, s, "k", "x", store.PutOptions{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	ctx := t.Context()
	_, err = s.Get(ctx, "k")
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("get after close: %v", err)
	}
	if _, err := s.Put(ctx, "k", nil, store.PutOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("put after close: %v", err)
	}
	if err := s.Delete(ctx, "k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("delete after close: %v", err)
	}
	if _, err := s.List(ctx, store.ListOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("list after close: %v", err)
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	if _, err := Open(missing); !errors.Is(err, iofs.ErrNotExist) || !errors.Is(err, ErrNoRoot) ||
		err.Error() != "fs: open "+missing+": the bucket directory does not exist" {
		t.Errorf("open of a missing root: %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o666)
	if _, err := Open(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("open of a file: %v", err)
	}
	if _, err := Open(""); err == nil {
		t.Error("open of an empty path succeeded")
	}
	s := openT(t, filepath.Join(dir, "new", "bucket"), WithCreateRoot())
	putT(t, s, "k", "x", store.PutOptions{})
	if _, err := Open(dir, WithFs(afero.NewMemMapFs())); !errors.Is(err, errNoInode) {
		t.Errorf("open on a file system without inode numbers: %v, want errNoInode", err)
	}
}

// TestInjectedBasePathFs: an afero.Fs over the OS works when injected.
func TestInjectedBasePathFs(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, WithFs(afero.NewBasePathFs(afero.NewOsFs(), dir)))
	v := putT(t, s, "a/b", "via afero", store.PutOptions{Condition: store.IfAbsent})
	o := getT(t, openT(t, dir), "a/b")
	if o.Version != v || string(o.Data) != "via afero" {
		t.Fatalf("read back through the default file system: %q %q", o.Data, o.Version)
	}
}

func TestUnknownConditionAndBadMetadataWriteNothing(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	ctx := t.Context()
	if _, err := s.Put(ctx, "k", nil, store.PutOptions{Condition: store.Condition{Kind: 9}}); err == nil {
		t.Fatal("an unknown condition kind was accepted")
	}
	_, err := s.Put(ctx, "k", nil, store.PutOptions{Metadata: map[string]string{"Bad Name": "x"}})
	if !errors.Is(err, store.ErrInvalidMetadata) {
		t.Fatalf("bad metadata: %v", err)
	}
	if got := tree(t, dir); len(got) != 1 {
		t.Fatalf("refused writes left %q", got)
	}
}

func TestEmptyObject(t *testing.T) {
	s := openT(t, t.TempDir())
	putT(t, s, "empty", "", store.PutOptions{})
	o := getT(t, s, "empty")
	if o.Data == nil || len(o.Data) != 0 {
		t.Fatalf("empty object read as %#v", o.Data)
	}
}

func TestLargeObjectRoundTrip(t *testing.T) {
	s := openT(t, t.TempDir())
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	putT(t, s, "big", string(body), store.PutOptions{})
	if o := getT(t, s, "big"); !bytes.Equal(o.Data, body) {
		t.Fatal("1 MiB object did not round-trip")
	}
}
