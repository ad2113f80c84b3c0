package migrate

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/heaptest"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// A 64 MiB database goes through a Litestream replica's restore and an
// import with the heap growing by far less than its size: both stream
// (the buckets refuse whole-object reads and large whole-object writes,
// and sample the heap every MiB of a body).
func TestImportStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 64 MiB database")
	}
	const mib = 64
	const bound = 16 << 20
	ctx := t.Context()
	peak := &heaptest.HeapPeak{}
	// The replica: one snapshot of a 64 MiB database of random
	// (incompressible) pages, so every MiB of it streams through a
	// sample.
	src := filepath.Join(t.TempDir(), "big.db")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<20)
	for i := 0; i < mib; i++ {
		for j := 0; j < len(buf); j += 8 {
			binary.LittleEndian.PutUint64(buf[j:], r.Uint64())
		}
		if i == 0 {
			copy(buf, sqliteMagic)
			binary.BigEndian.PutUint16(buf[16:], 4096)
			buf[18], buf[19] = 1, 1
			binary.BigEndian.PutUint32(buf[24:], 0) // header page count invalid
			binary.BigEndian.PutUint32(buf[92:], 1)
		}
		f.Write(buf)
	}
	f.Close()
	buf = nil
	big, err := OpenDatabase(src)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	// The replica's one file is on disk, served by a bucket double that
	// samples the heap every MiB it reads (the buckets of heaptest hold
	// bodies in memory, which random pages would fill).
	rep := &diskReplica{dir: t.TempDir(), peak: peak}
	key := "ltx/0/" + ltx.Filename(1, 1)
	lf, err := os.Create(filepath.Join(rep.dir, ltx.Filename(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ltx.EncodeTo(lf, ltx.Header{PageSize: 4096, Commit: big.Pages(), MinTXID: 1, MaxTXID: 1, Timestamp: 1}, big.eachPage()); err != nil {
		t.Fatal(err)
	}
	lf.Close()
	rep.key = key

	base := peak.Reset()
	im, err := RestoreLitestream(ctx, rep, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	peak.Sample()
	restore := peak.Max() - base
	if im.Size() != mib<<20 {
		t.Fatalf("restored %d bytes", im.Size())
	}

	// The import's bucket keeps nothing of the body (the heap measured is
	// the import's, not the stored snapshot's).
	bucket := discarding{heaptest.Bucket{Store: memstore.New(), Peak: peak, MaxWhole: 1 << 20}}
	base = peak.Reset()
	if _, err := Import(ctx, Target{Bucket: bucket, DataDir: t.TempDir()}, cellKey, im); err != nil {
		t.Fatal(err)
	}
	imp := peak.Max() - base
	t.Logf("%d MiB database: heap growth %.1f MiB restoring the replica, %.1f MiB importing", mib, float64(restore)/(1<<20), float64(imp)/(1<<20))
	if restore > bound || imp > bound {
		t.Fatalf("the heap grew by %d bytes restoring, %d importing; bound %d", restore, imp, bound)
	}
}

// discarding reads a streamed body through heap samples and keeps an
// empty object.
type discarding struct{ heaptest.Bucket }

func (d discarding) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	var n int64
	buf := make([]byte, 64<<10)
	for {
		k, err := r.Read(buf)
		n += int64(k)
		if n >= 1<<20 {
			d.Peak.Sample()
			n = 0
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return d.Bucket.Store.Put(ctx, key, nil, opts)
}

// diskReplica is a bucket holding one object, key, whose body is the one
// file in dir; reads sample the heap every MiB.
type diskReplica struct {
	memstore.Store
	dir, key string
	peak     *heaptest.HeapPeak
}

func (d *diskReplica) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	st, err := os.Stat(filepath.Join(d.dir, path.Base(d.key)))
	if err != nil {
		return store.ListPage{}, err
	}
	return store.ListPage{Objects: []store.ObjectInfo{{Key: d.key, Size: st.Size()}}}, nil
}

func (d *diskReplica) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	f, err := os.Open(filepath.Join(d.dir, path.Base(key)))
	if err != nil {
		return nil, err
	}
	st, _ := f.Stat()
	return &store.Reader{Key: key, Size: st.Size(), Length: st.Size(), Body: &sampledFile{f: f, peak: d.peak}}, nil
}

func (d *diskReplica) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	return "", errors.ErrUnsupported
}

type sampledFile struct {
	f    *os.File
	peak *heaptest.HeapPeak
	n    int
}

func (s *sampledFile) Read(p []byte) (int, error) {
	if s.n >= 1<<20 {
		s.peak.Sample()
		s.n = 0
	}
	n, err := s.f.Read(p)
	s.n += n
	return n, err
}

func (s *sampledFile) Close() error { return s.f.Close() }
