//go:build unix

package fs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cellb/cellb/core/store"
	"github.com/spf13/afero"
)

// syncWatch records, on one clock of sequence numbers, when each object's
// name was changed (a rename onto it or its removal) and when each
// directory fsync began and ended, so a test can tell which fsyncs cover
// which change.
type syncWatch struct {
	afero.Fs
	seq   atomic.Int64
	delay time.Duration // added inside each directory fsync, to widen the window

	mu      sync.Mutex
	changed map[string]int64 // object name -> sequence number after its change
	links   int              // objects published by link
	syncs   []dirFsync
}

type dirFsync struct {
	dir        string
	start, end int64
	err        error
}

func (w *syncWatch) tick() int64 { return w.seq.Add(1) }

func (w *syncWatch) change(name string) {
	if strings.HasPrefix(name, metaDir+"/") {
		return
	}
	n := w.tick()
	w.mu.Lock()
	w.changed[name] = n
	w.mu.Unlock()
}

func (w *syncWatch) Rename(oldname, newname string) error {
	err := w.Fs.Rename(oldname, newname)
	if err == nil {
		w.change(newname)
	}
	return err
}

func (w *syncWatch) Remove(name string) error {
	err := w.Fs.Remove(name)
	if err == nil {
		w.change(name)
	}
	return err
}

func (w *syncWatch) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := w.Fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &watchedFile{File: f, w: w, dir: flag&syscall.O_DIRECTORY != 0, name: name}, nil
}

func (w *syncWatch) Open(name string) (afero.File, error) { return w.OpenFile(name, os.O_RDONLY, 0) }

func unwatched(f afero.File) afero.File {
	if wf, ok := f.(*watchedFile); ok {
		return wf.File
	}
	return f
}

func (w *syncWatch) openUnnamed(dir afero.File, perm os.FileMode) (afero.File, error) {
	u, ok := w.Fs.(unnamedFs)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return u.openUnnamed(unwatched(dir), perm)
}

func (w *syncWatch) linkUnnamed(f, dir afero.File, name string) error {
	err := w.Fs.(unnamedFs).linkUnnamed(unwatched(f), unwatched(dir), name)
	if err == nil && !strings.HasPrefix(name, metaDir+"/") {
		w.change(name)
		w.mu.Lock()
		w.links++
		w.mu.Unlock()
	}
	return err
}

type watchedFile struct {
	afero.File
	w    *syncWatch
	dir  bool
	name string
}

func (f *watchedFile) Sync() error {
	if !f.dir {
		return f.File.Sync()
	}
	start := f.w.tick()
	time.Sleep(f.w.delay)
	err := f.File.Sync()
	end := f.w.tick()
	f.w.mu.Lock()
	f.w.syncs = append(f.w.syncs, dirFsync{dir: f.name, start: start, end: end, err: err})
	f.w.mu.Unlock()
	return err
}

// Fd and SyscallConn keep flock and the record attribute working.
func (f *watchedFile) Fd() uintptr { return f.File.(interface{ Fd() uintptr }).Fd() }

func (f *watchedFile) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := f.File.(interface {
		SyscallConn() (syscall.RawConn, error)
	}); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// covered reports whether a successful fsync of dir began after seq
// number from and ended before seq number to.
func (w *syncWatch) covered(dir string, from, to int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.syncs {
		if s.dir == dir && s.err == nil && s.start > from && s.end < to {
			return true
		}
	}
	return false
}

func (w *syncWatch) dirSyncs(dir string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, s := range w.syncs {
		if s.dir == dir {
			n++
		}
	}
	return n
}

func openWatched(t testing.TB, delay time.Duration) (*Store, *syncWatch) {
	t.Helper()
	dir := t.TempDir()
	base, closeBase, err := osFs(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeBase() })
	w := &syncWatch{Fs: base, delay: delay, changed: map[string]int64{}}
	s, err := Open(dir, WithFs(w))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, w
}

// TestConcurrentWritersShareDirectoryFsyncs: in one directory, all at
// once, 16 Deletes (unlink), 16 Puts creating keys (link) and 16 Puts
// replacing objects (rename) make fewer directory fsyncs than there are
// callers, and each caller returns only after an fsync of the directory
// that began after its own change, and ended.
func TestConcurrentWritersShareDirectoryFsyncs(t *testing.T) {
	s, w := openWatched(t, 2*time.Millisecond)
	ctx := t.Context()
	const dir = "log/n1/0000000001/bundle"
	const n = 16
	putT(t, s, dir+"/keep", "keep", store.PutOptions{})
	for i := range n {
		putT(t, s, fmt.Sprintf("%s/old-%02d", dir, i), "old", store.PutOptions{})
		putT(t, s, fmt.Sprintf("%s/rep-%02d", dir, i), "old", store.PutOptions{})
	}
	before := w.dirSyncs(dir)
	w.mu.Lock()
	w.links = 0
	w.mu.Unlock()

	type call struct {
		key string
		ret int64
		err error
	}
	calls := make([]call, 3*n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 3 * n {
		wg.Go(func() {
			<-start
			c := &calls[i]
			switch i % 3 {
			case 0:
				c.key = fmt.Sprintf("%s/old-%02d", dir, i/3)
				c.err = s.Delete(ctx, c.key)
			case 1:
				c.key = fmt.Sprintf("%s/new-%02d", dir, i/3)
				_, c.err = s.Put(ctx, c.key, []byte("new"), store.PutOptions{Condition: store.IfAbsent})
			case 2:
				c.key = fmt.Sprintf("%s/rep-%02d", dir, i/3)
				_, c.err = s.Put(ctx, c.key, []byte("new"), store.PutOptions{})
			}
			c.ret = w.tick()
		})
	}
	close(start)
	wg.Wait()

	for _, c := range calls {
		if c.err != nil {
			t.Fatalf("%s: %v", c.key, c.err)
		}
		w.mu.Lock()
		changed, ok := w.changed[c.key]
		w.mu.Unlock()
		if !ok {
			t.Fatalf("%s: no link, rename or removal was seen", c.key)
		}
		if !w.covered(dir, changed, c.ret) {
			t.Errorf("%s returned (seq %d) without an fsync of %s that began after its change (seq %d)", c.key, c.ret, dir, changed)
		}
	}
	if w.links != n && attrsWork(t, t.TempDir()) {
		t.Errorf("%d of the %d new keys were linked", w.links, n)
	}
	syncs := w.dirSyncs(dir) - before
	t.Logf("%d callers, %d directory fsyncs", len(calls), syncs)
	if syncs >= len(calls) {
		t.Errorf("%d callers made %d fsyncs of their directory, want fewer", len(calls), syncs)
	}
}

// TestDirSyncsRounds drives dirSyncs alone: twenty callers arrive while
// an fsync runs; none may return with that fsync (it may have begun before
// their change), and they share the next one.
func TestDirSyncsRounds(t *testing.T) {
	var g dirSyncs
	release := make(chan struct{})
	var runs, completed atomic.Int64
	fsync := func() error {
		if runs.Add(1) == 1 {
			<-release // the first fsync runs until the late callers are in
		}
		completed.Add(1)
		return nil
	}
	first := make(chan error)
	go func() { first <- g.do("d", fsync) }()
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	const late = 20
	seen := make(chan int64, late) // fsyncs completed when each returned
	for range late {
		go func() {
			if err := g.do("d", fsync); err != nil {
				t.Error(err)
			}
			seen <- completed.Load()
		}()
	}
	waitUsers(&g, "d", late+1)
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range late {
		if n := <-seen; n < 2 {
			t.Errorf("a caller that arrived during the first fsync returned after %d fsyncs, want a second one", n)
		}
	}
	// Usually 2; a caller still on its way in when the second began waits
	// for a third.
	if got := runs.Load(); got >= late+1 {
		t.Fatalf("%d fsyncs for %d callers, want fewer", got, late+1)
	}
	t.Logf("%d fsyncs for %d callers", runs.Load(), late+1)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.dirs) != 0 {
		t.Fatalf("dirSyncs kept %d idle directories", len(g.dirs))
	}
}

// TestDirSyncsShareErrors: every caller of a round gets its fsync's error.
func TestDirSyncsShareErrors(t *testing.T) {
	var g dirSyncs
	boom := errors.New("boom")
	release := make(chan struct{})
	var runs atomic.Int64
	go g.do("d", func() error { runs.Add(1); <-release; return nil })
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- g.do("d", func() error { runs.Add(1); return boom }) }()
	}
	waitUsers(&g, "d", 4)
	close(release)
	for range 3 {
		if err := <-errs; !errors.Is(err, boom) {
			t.Fatalf("a caller of the failed round got %v", err)
		}
	}
}

// waitUsers waits until n callers are inside dirSyncs.do for dir.
func waitUsers(g *dirSyncs, dir string, n int) {
	for {
		g.mu.Lock()
		d := g.dirs[dir]
		users := 0
		if d != nil {
			users = d.users
		}
		g.mu.Unlock()
		if users == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkConcurrentDeletes: 64 concurrent Deletes in one directory, with
// the directory fsyncs each costs (fsyncs/delete).
func BenchmarkConcurrentDeletes(b *testing.B) {
	s, c := openCounted(b, b.TempDir())
	ctx := b.Context()
	const dir = "log/n1/0000000001/bundle"
	const callers = 64
	body := make([]byte, 300)
	if _, err := s.Put(ctx, dir+"/keep", body, store.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	var syncs, deletes int64
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		for i := range callers {
			if _, err := s.Put(ctx, fmt.Sprintf("%s/e1-%08d.ltxb", dir, i), body, store.PutOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		c.n.Store(0)
		b.StartTimer()
		t0 := time.Now()
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				if err := s.Delete(ctx, fmt.Sprintf("%s/e1-%08d.ltxb", dir, i)); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		took += time.Since(t0)
		syncs += c.n.Load()
		deletes += callers
	}
	b.ReportMetric(float64(syncs)/float64(deletes), "fsyncs/delete")
	b.ReportMetric(float64(took.Nanoseconds())/float64(deletes), "ns/delete")
}
