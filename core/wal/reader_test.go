package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/page"
)

// frameAt returns the page stored in the frame that starts at off.
func frameAt(b []byte, pageSize int, off int64) []byte {
	return b[off+FrameHeaderSize : off+FrameHeaderSize+int64(pageSize)]
}

type wantCommit struct {
	dbSize uint32
	pgnos  []uint32
	// frames are the offsets of the frames holding each page's final
	// version, parallel to pgnos.
	frames []int64
}

func checkCommits(t *testing.T, file []byte, b Batch, want []wantCommit) {
	t.Helper()
	if len(b.Commits) != len(want) {
		t.Fatalf("got %d commits, want %d: %+v", len(b.Commits), len(want), summary(b))
	}
	for i, w := range want {
		c := b.Commits[i]
		if c.DBSize != w.dbSize {
			t.Errorf("commit %d: DBSize %d, want %d", i, c.DBSize, w.dbSize)
		}
		if len(c.Pages) != len(w.pgnos) {
			t.Fatalf("commit %d: %d pages, want %v", i, len(c.Pages), w.pgnos)
		}
		for j, p := range c.Pages {
			if p.Pgno != w.pgnos[j] {
				t.Errorf("commit %d page %d: pgno %d, want %d", i, j, p.Pgno, w.pgnos[j])
			}
			if !bytes.Equal(p.Data, frameAt(file, b.Header.PageSize, w.frames[j])) {
				t.Errorf("commit %d page %d: data differs from the frame at %d", i, p.Pgno, w.frames[j])
			}
		}
	}
}

func summary(b Batch) string {
	s := fmt.Sprintf("reset=%v next=%d stop=%v@%d uncommitted=%d", b.Reset, b.Next.Offset, b.Stop, b.StopOffset, b.Uncommitted)
	for _, c := range b.Commits {
		s += fmt.Sprintf(" [db=%d", c.DBSize)
		for _, p := range c.Pages {
			s += fmt.Sprintf(" %d", p.Pgno)
		}
		s += "]"
	}
	return s
}

const fs4k = FrameHeaderSize + 4096 // frame size with 4 KiB pages

func TestSampleWAL(t *testing.T) {
	file := readVector(t, "sample.wal")
	b, err := ReadCommits(bytes.NewReader(file), Position{})
	if err != nil {
		t.Fatal(err)
	}
	h := b.Header
	if h.Magic != MagicLittleEndian || h.PageSize != 4096 || h.CheckpointSeq != 0 || h.Salt1 != 0x9bf29a02 || h.Salt2 != 0x68670130 {
		t.Fatalf("header %+v", h)
	}
	if b.Reset {
		t.Error("first read reported a reset")
	}
	// The README counts the 20 inserts and the update as two commits; the
	// CREATE TABLE before them is a third (pages 1 and 2, the table empty).
	checkCommits(t, file, b, []wantCommit{
		{dbSize: 2, pgnos: []uint32{1, 2}, frames: []int64{32, 32 + fs4k}},
		{dbSize: 2, pgnos: []uint32{2}, frames: []int64{32 + 2*fs4k}},
		{dbSize: 2, pgnos: []uint32{2}, frames: []int64{32 + 3*fs4k}},
	})
	if page2 := b.Commits[1].Pages[0].Data; page2[0] != 13 || page2[3] != 0 || page2[4] != 20 {
		t.Errorf("commit 2's page 2 is not a table leaf with 20 cells: % x", page2[:8])
	}
	if b.Next.Offset != int64(len(file)) || b.Stop != StopEnd || b.StopOffset != int64(len(file)) || b.Uncommitted != 0 {
		t.Errorf("end state: %s", summary(b))
	}
	for i, c := range b.Commits {
		if c.Offset+c.Size > int64(len(file)) || c.Frames != len(c.Pages) {
			t.Errorf("commit %d: range %d+%d, %d frames", i, c.Offset, c.Size, c.Frames)
		}
	}
}

func TestWALReaderVectors(t *testing.T) {
	okCommits := []wantCommit{
		{dbSize: 2, pgnos: []uint32{1, 2}, frames: []int64{32, 32 + fs4k}},
		{dbSize: 2, pgnos: []uint32{2}, frames: []int64{32 + 2*fs4k}},
	}
	tests := []struct {
		name     string
		want     []wantCommit
		next     int64
		stop     StopReason
		stopAt   int64
		uncommit int
	}{
		{"ok", okCommits, 32 + 3*fs4k, StopEnd, 32 + 3*fs4k, 0},
		// The first transaction's commit frame is bad: nothing is
		// applied, not even its valid first frame.
		{"frame-checksum-mismatch", nil, 32, StopChecksum, 32 + fs4k, 1},
		{"salt-mismatch", nil, 32, StopSalt, 32 + fs4k, 1},
		// Two commits of the current generation, then frames left from
		// the two generations before the last restart.
		{"frame-salts", []wantCommit{
			{dbSize: 2, pgnos: []uint32{2}, frames: []int64{32}},
			{dbSize: 2, pgnos: []uint32{2}, frames: []int64{32 + fs4k}},
		}, 32 + 2*fs4k, StopSalt, 32 + 2*fs4k, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := readVector(t, "wal-reader/"+tt.name+"/wal")
			b, err := ReadCommits(bytes.NewReader(file), Position{})
			if err != nil {
				t.Fatal(err)
			}
			checkCommits(t, file, b, tt.want)
			if b.Next.Offset != tt.next || b.Stop != tt.stop || b.StopOffset != tt.stopAt || b.Uncommitted != tt.uncommit {
				t.Errorf("got %s; want next=%d stop=%v@%d uncommitted=%d", summary(b), tt.next, tt.stop, tt.stopAt, tt.uncommit)
			}
			// Reading again from Next finds nothing new and stops at the
			// same place.
			again, err := ReadCommits(bytes.NewReader(file), b.Next)
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Commits) != 0 || again.Next != b.Next || again.Reset || again.Stop != tt.stop {
				t.Errorf("second read: %s", summary(again))
			}
		})
	}
}

// The frame-salts vector holds frames of three generations. A reader whose
// position belongs to an older generation must notice the restart and read
// the current one from its first frame, never the leftover frames.
func TestFrameSaltsRestartDetected(t *testing.T) {
	file := readVector(t, "wal-reader/frame-salts/wal")
	old := Position{Salt1: 0x1b9a294a, Salt2: 0x031f195e, Offset: 32 + 3*fs4k, Checksum1: 1, Checksum2: 2}
	b, err := ReadCommits(bytes.NewReader(file), old)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Reset {
		t.Fatal("restart not reported")
	}
	if b.Header.CheckpointSeq != 2 {
		t.Errorf("checkpoint sequence %d, want 2", b.Header.CheckpointSeq)
	}
	checkCommits(t, file, b, []wantCommit{
		{dbSize: 2, pgnos: []uint32{2}, frames: []int64{32}},
		{dbSize: 2, pgnos: []uint32{2}, frames: []int64{32 + fs4k}},
	})
	if b.Next.Salt1 != 0x1b9a294b || b.Next.Salt2 != 0x37f91916 {
		t.Errorf("next position has salts %#x %#x", b.Next.Salt1, b.Next.Salt2)
	}
}

// Reading a growing log in steps gives the same commits as reading it
// whole, whatever the step boundaries (inside frames, inside transactions).
func TestIncrementalMatchesWhole(t *testing.T) {
	w := newWAL(512, false, 7, 9)
	for i := range 40 {
		tag := byte(i)
		w.frame(uint32(1+i%5), 0, w.page(tag))
		w.frame(uint32(2+i%3), uint32(6+i%4), w.page(tag+100))
	}
	file := w.bytes()
	whole, err := ReadCommits(bytes.NewReader(file), Position{})
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Commits) != 40 {
		t.Fatalf("%d commits", len(whole.Commits))
	}
	for _, step := range []int{1, 100, 512 + 24, 700, 5000} {
		for _, pooled := range []bool{false, true} {
			var got []Commit
			var pos Position
			var r Reader
			if pooled {
				r.Pages = new(page.Pool)
			}
			for n := 0; n <= len(file)+step; n += step {
				b, err := r.ReadCommits(prefixReader{file, n}, pos)
				if err != nil {
					t.Fatalf("step %d at %d: %v", step, n, err)
				}
				if b.Reset {
					t.Fatalf("step %d at %d: spurious reset", step, n)
				}
				got = append(got, b.Commits...)
				pos = b.Next
			}
			if fmt.Sprint(got) != fmt.Sprint(whole.Commits) {
				t.Errorf("step %d, pooled %v: incremental commits differ from a whole read", step, pooled)
			}
			if pos != whole.Next {
				t.Errorf("step %d, pooled %v: position %+v, want %+v", step, pooled, pos, whole.Next)
			}
		}
	}
}

func TestBigEndianChecksums(t *testing.T) {
	w := newWAL(1024, true, 1, 2)
	w.frame(1, 0, w.page(1)).frame(3, 3, w.page(2)).frame(2, 3, w.page(3))
	file := w.bytes()
	b, err := ReadCommits(bytes.NewReader(file), Position{})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Header.BigEndianChecksum() {
		t.Error("big-endian magic not recognised")
	}
	fs := int64(FrameHeaderSize + 1024)
	checkCommits(t, file, b, []wantCommit{
		{dbSize: 3, pgnos: []uint32{1, 3}, frames: []int64{32, 32 + fs}},
		{dbSize: 3, pgnos: []uint32{2}, frames: []int64{32 + 2*fs}},
	})
	// The same frames checked with the other byte order fail at once.
	file[3] = 0x82
	if _, err := ParseHeader(file); !errors.Is(err, ErrInvalidHeader) {
		t.Errorf("header with flipped byte order accepted: %v", err)
	}
}

func TestPageWrittenTwiceKeepsLastVersion(t *testing.T) {
	w := newWAL(512, false, 1, 1)
	w.frame(3, 0, w.page(1)).frame(1, 0, w.page(2)).frame(3, 0, w.page(3)).frame(2, 4, w.page(4))
	file := w.bytes()
	b, err := ReadCommits(bytes.NewReader(file), Position{})
	if err != nil {
		t.Fatal(err)
	}
	fs := int64(FrameHeaderSize + 512)
	checkCommits(t, file, b, []wantCommit{
		{dbSize: 4, pgnos: []uint32{1, 2, 3}, frames: []int64{32 + fs, 32 + 3*fs, 32 + 2*fs}},
	})
	if b.Commits[0].Frames != 4 {
		t.Errorf("Frames = %d, want 4", b.Commits[0].Frames)
	}
}

func TestShrinkDropsPagesBeyondSize(t *testing.T) {
	w := newWAL(512, false, 1, 1)
	w.frame(1, 0, w.page(1)).frame(5, 0, w.page(2)).frame(4, 0, w.page(3)).frame(2, 3, w.page(4))
	file := w.bytes()
	b, err := ReadCommits(bytes.NewReader(file), Position{})
	if err != nil {
		t.Fatal(err)
	}
	fs := int64(FrameHeaderSize + 512)
	checkCommits(t, file, b, []wantCommit{{dbSize: 3, pgnos: []uint32{1, 2}, frames: []int64{32, 32 + 3*fs}}})
}

func TestUnfinishedTransactionLeftForLater(t *testing.T) {
	w := newWAL(512, false, 1, 1)
	w.frame(1, 1, w.page(1))
	w.frame(2, 0, w.page(2)).frame(3, 0, w.page(3))
	b, err := ReadCommits(bytes.NewReader(w.bytes()), Position{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Commits) != 1 || b.Uncommitted != 2 || b.Stop != StopEnd {
		t.Fatalf("%s", summary(b))
	}
	w.frame(1, 3, w.page(4))
	file := w.bytes()
	b2, err := ReadCommits(bytes.NewReader(file), b.Next)
	if err != nil {
		t.Fatal(err)
	}
	fs := int64(FrameHeaderSize + 512)
	checkCommits(t, file, b2, []wantCommit{{dbSize: 3, pgnos: []uint32{1, 2, 3}, frames: []int64{32 + 3*fs, 32 + fs, 32 + 2*fs}}})
	if b2.Commits[0].Offset != 32+fs || b2.Commits[0].Size != 3*fs {
		t.Errorf("range %d+%d", b2.Commits[0].Offset, b2.Commits[0].Size)
	}
}

// After a restart SQLite overwrites the log from the start; when the new
// generation is shorter than the old one, the old generation's frames stay
// in the file behind it and must not be read as part of it.
func TestRestartDetectedAndOldFramesIgnored(t *testing.T) {
	w := newWAL(512, false, 100, 5)
	for i := range 6 {
		w.frame(uint32(i+1), uint32(i+1), w.page(byte(i)))
	}
	first, err := ReadCommits(bytes.NewReader(w.bytes()), Position{})
	if err != nil || len(first.Commits) != 6 {
		t.Fatalf("%v %s", err, summary(first))
	}
	w.restart(77)
	w.frame(2, 6, w.page(50)).frame(3, 6, w.page(51))
	file := w.bytes()
	b, err := ReadCommits(bytes.NewReader(file), first.Next)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Reset || b.Header.Salt1 != 101 || b.Header.CheckpointSeq != 1 {
		t.Fatalf("restart not reported: %s header %+v", summary(b), b.Header)
	}
	fs := int64(FrameHeaderSize + 512)
	checkCommits(t, file, b, []wantCommit{
		{dbSize: 6, pgnos: []uint32{2}, frames: []int64{32}},
		{dbSize: 6, pgnos: []uint32{3}, frames: []int64{32 + fs}},
	})
	if b.Stop != StopSalt || b.StopOffset != 32+2*fs {
		t.Errorf("stop %v@%d, want salt mismatch at %d", b.Stop, b.StopOffset, 32+2*fs)
	}
	// Restarted again before the reader came back: still one reset, and
	// only the newest generation is read.
	w.restart(78)
	w.frame(4, 6, w.page(60))
	file = w.bytes()
	b2, err := ReadCommits(bytes.NewReader(file), b.Next)
	if err != nil {
		t.Fatal(err)
	}
	if !b2.Reset || len(b2.Commits) != 1 || b2.Commits[0].Pages[0].Pgno != 4 {
		t.Errorf("%s", summary(b2))
	}
}

func TestStopsAtBadFrames(t *testing.T) {
	fs := int64(FrameHeaderSize + 512)
	tests := []struct {
		name string
		add  func(w *walFile)
		stop StopReason
	}{
		{"checksum", func(w *walFile) { w.frameWith(2, 2, w.page(9), w.h.Salt1, w.h.Salt2, true) }, StopChecksum},
		{"salt1", func(w *walFile) { w.frameWith(2, 2, w.page(9), w.h.Salt1+1, w.h.Salt2, false) }, StopSalt},
		{"salt2", func(w *walFile) { w.frameWith(2, 2, w.page(9), w.h.Salt1, w.h.Salt2^1, false) }, StopSalt},
		{"page zero", func(w *walFile) { w.frame(0, 2, w.page(9)) }, StopPgno},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWAL(512, false, 3, 4)
			w.frame(1, 1, w.page(1))
			tt.add(w)
			// A valid-looking commit after the bad frame must not be read
			// either: the chain is broken.
			w.frame(3, 3, w.page(2))
			b, err := ReadCommits(bytes.NewReader(w.bytes()), Position{})
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Commits) != 1 || b.Stop != tt.stop || b.StopOffset != 32+fs || b.Next.Offset != 32+fs {
				t.Errorf("%s", summary(b))
			}
		})
	}
}

func TestManyFramesAcrossChunks(t *testing.T) {
	w := newWAL(65536, false, 1, 2)
	const n = 40 // more than one read of at most 1 MiB
	for i := range n {
		db := uint32(0)
		if i == n-1 {
			db = n
		}
		w.frame(uint32(i+1), db, w.page(byte(i)))
	}
	file := w.bytes()
	for name, f := range map[string]io.ReaderAt{"sized": bytes.NewReader(file), "unsized": prefixReader{file, len(file)}} {
		b, err := ReadCommits(f, Position{})
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Commits) != 1 || len(b.Commits[0].Pages) != n || b.Next.Offset != int64(len(file)) {
			t.Fatalf("%s: %s", name, summary(b))
		}
		for i, p := range b.Commits[0].Pages {
			if !bytes.Equal(p.Data, w.page(byte(i))) {
				t.Errorf("%s: page %d differs", name, p.Pgno)
			}
		}
	}
}

// Pages returned by one call are not touched by later calls, even with the
// same Reader: a capturing driver hands them to the log while it goes on
// reading.
func TestPagesStayValid(t *testing.T) {
	for _, pooled := range []bool{false, true} {
		w := newWAL(512, false, 1, 2)
		w.frame(1, 1, w.page(1))
		var r Reader
		if pooled {
			r.Pages = new(page.Pool)
		}
		first, err := r.ReadCommits(bytes.NewReader(w.bytes()), Position{})
		if err != nil || len(first.Commits) != 1 {
			t.Fatal(err)
		}
		w.frame(1, 1, w.page(2)).frame(1, 1, w.page(3))
		second, err := r.ReadCommits(bytes.NewReader(w.bytes()), first.Next)
		if err != nil || len(second.Commits) != 2 {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Commits[0].Pages[0].Data, w.page(1)) {
			t.Errorf("pooled %v: a later read changed a page returned earlier", pooled)
		}
		// Released buffers come back for later commits; those that were
		// not released stay as they were.
		// (what driver.CapturedCommit.Release does)
		for _, p := range second.Commits[0].Pages {
			r.Pages.Put(p.Data)
		}
		w.frame(1, 1, w.page(4))
		third, err := r.ReadCommits(bytes.NewReader(w.bytes()), second.Next)
		if err != nil || len(third.Commits) != 1 {
			t.Fatal(err)
		}
		for _, c := range []struct {
			got  []byte
			want byte
		}{{first.Commits[0].Pages[0].Data, 1}, {second.Commits[1].Pages[0].Data, 3}, {third.Commits[0].Pages[0].Data, 4}} {
			if !bytes.Equal(c.got, w.page(c.want)) {
				t.Errorf("pooled %v: page of commit %d changed", pooled, c.want)
			}
		}
	}
}

// With a pool, the version of a page that a transaction wrote twice is the
// last one even though the reader reuses its read buffer, and no returned
// page aliases that buffer.
func TestPooledPagesDoNotShareTheReadBuffer(t *testing.T) {
	w := newWAL(512, false, 1, 2)
	w.frame(1, 0, w.page(1)).frame(1, 1, w.page(2)).frame(1, 0, w.page(3))
	var pool page.Pool
	r := Reader{Pages: &pool}
	b, err := r.ReadCommits(bytes.NewReader(w.bytes()), Position{})
	if err != nil || len(b.Commits) != 1 || b.Uncommitted != 1 {
		t.Fatalf("%v %s", err, summary(b))
	}
	page := b.Commits[0].Pages[0].Data
	if !bytes.Equal(page, w.page(2)) {
		t.Fatal("wrong version of the page")
	}
	for i := range r.scratch {
		r.scratch[i] = 0
	}
	if !bytes.Equal(page, w.page(2)) {
		t.Fatal("a returned page shares the reader's read buffer")
	}
}

// An *os.File reports its size through Stat.
func TestReadsOSFile(t *testing.T) {
	f, err := os.Open(filepath.Join(vectorDir(t), "sample.wal"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if sizeOf(f) != 16512 {
		t.Errorf("sizeOf(*os.File) = %d", sizeOf(f))
	}
	b, err := ReadCommits(f, Position{})
	if err != nil || len(b.Commits) != 3 {
		t.Errorf("%v %s", err, summary(b))
	}
}

func TestShortFileIsEmpty(t *testing.T) {
	pos := Position{Salt1: 1, Salt2: 2, Offset: 32 + 3*fs4k}
	for _, n := range []int{0, 1, 31} {
		b, err := ReadCommits(bytes.NewReader(make([]byte, n)), pos)
		if err != nil || len(b.Commits) != 0 || b.Next != pos || b.Reset {
			t.Errorf("%d bytes: %v %s", n, err, summary(b))
		}
	}
}

func TestInvalidPosition(t *testing.T) {
	w := newWAL(512, false, 1, 2)
	w.frame(1, 1, w.page(1))
	for _, off := range []int64{-1, 5, 33, 32 + 100} {
		pos := Position{Salt1: 1, Salt2: 2, Offset: off}
		b, err := ReadCommits(bytes.NewReader(w.bytes()), pos)
		if !errors.Is(err, ErrInvalidPosition) || b.Next != pos {
			t.Errorf("offset %d: %v", off, err)
		}
	}
}

type failingReader struct {
	okBytes int64 // reads below this succeed from b
	b       []byte
}

var errDisk = errors.New("disk on fire")

func (f failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) <= f.okBytes {
		return bytesReader(f.b).ReadAt(p, off)
	}
	return 0, errDisk
}

func TestReadErrorsLoseNothing(t *testing.T) {
	w := newWAL(512, false, 1, 2)
	w.frame(1, 1, w.page(1)).frame(2, 2, w.page(2))
	file := w.bytes()
	for _, ok := range []int64{0, HeaderSize} {
		_, err := ReadCommits(failingReader{ok, file}, Position{})
		if !errors.Is(err, errDisk) {
			t.Errorf("error after %d bytes: %v", ok, err)
		}
	}
	pos := Position{Salt1: 1, Salt2: 2, Offset: HeaderSize, Checksum1: w.h.Checksum1, Checksum2: w.h.Checksum2}
	b, err := ReadCommits(failingReader{HeaderSize, file}, pos)
	if !errors.Is(err, errDisk) || b.Next != pos || len(b.Commits) != 0 {
		t.Errorf("%v %s", err, summary(b))
	}
	// Retrying once the disk recovers reads everything.
	b, err = ReadCommits(bytes.NewReader(file), b.Next)
	if err != nil || len(b.Commits) != 2 {
		t.Errorf("retry: %v %s", err, summary(b))
	}
}

var _ io.ReaderAt = failingReader{}

// ReadCommitsFrom gives what ReadCommits gives while the generation goes
// on, and nothing once the log has restarted (the caller then falls back
// to ReadCommits).
func TestReadCommitsFrom(t *testing.T) {
	w := newWAL(512, false, 4, 5)
	w.frame(1, 1, w.page(1))
	first, err := ReadCommits(bytes.NewReader(w.bytes()), Position{})
	if err != nil {
		t.Fatal(err)
	}
	w.frame(2, 2, w.page(2)).frame(1, 0, w.page(3)).frame(3, 3, w.page(4))
	file := w.bytes()
	var r Reader
	want, err := r.ReadCommits(bytes.NewReader(file), first.Next)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadCommitsFrom(bytes.NewReader(file), first.Next, first.Header)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Commits) != fmt.Sprint(want.Commits) || got.Next != want.Next || len(got.Commits) != 2 {
		t.Errorf("ReadCommitsFrom %s, ReadCommits %s", summary(got), summary(want))
	}
	// After a restart whose new frames reach past the old position, the
	// frames there carry new salts: nothing is read.
	w.restart(99)
	for i := range 6 {
		w.frame(uint32(i+1), 6, w.page(byte(50+i)))
	}
	after, err := r.ReadCommitsFrom(bytes.NewReader(w.bytes()), got.Next, first.Header)
	if err != nil || len(after.Commits) != 0 || after.Stop != StopSalt || after.Next != got.Next {
		t.Errorf("after a restart: %v %s", err, summary(after))
	}
	full, err := r.ReadCommits(bytes.NewReader(w.bytes()), got.Next)
	if err != nil || !full.Reset || len(full.Commits) != 6 {
		t.Errorf("fallback: %v %s", err, summary(full))
	}
	// Positions that do not belong to the header's generation are refused.
	for _, p := range []Position{{}, {Salt1: 1, Salt2: 2, Offset: 32}, {Salt1: 4, Salt2: 5, Offset: 40}} {
		if _, err := r.ReadCommitsFrom(bytes.NewReader(file), p, first.Header); !errors.Is(err, ErrInvalidPosition) {
			t.Errorf("position %+v: %v", p, err)
		}
	}
}
