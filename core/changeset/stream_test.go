package changeset

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/internal/imagespool"
	"github.com/cellb/cellb/core/internal/synthdb"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// randomFile is a file of a few records, a snapshot when image is set.
func randomFile(r *rand.Rand, image []byte) *File {
	f := &File{Cell: "Room:x", Epoch: r.Uint64N(9), MinSeq: 3, Timestamp: r.Int64()}
	seq := f.MinSeq
	if image != nil {
		f.Records = append(f.Records, Record{Seq: seq, Kind: KindImage, Data: image})
	}
	for range r.IntN(4) {
		seq += 1 + r.Uint64N(3)
		cs := make([]byte, r.IntN(3000))
		for i := range cs {
			cs[i] = byte(r.Uint32())
		}
		f.Records = append(f.Records, Record{Seq: seq, Kind: KindChangeset, Data: cs})
	}
	f.MaxSeq = seq + r.Uint64N(2)
	return f
}

// memFile is an ImageFile in memory.
type memFile struct{ b []byte }

func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	if end := off + int64(len(p)); end > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, end-int64(len(m.b)))...)
	}
	return copy(m.b[off:], p), nil
}
func (m *memFile) Truncate(n int64) error {
	if n <= int64(len(m.b)) {
		m.b = m.b[:n]
	} else {
		m.b = append(m.b, make([]byte, n-int64(len(m.b)))...)
	}
	return nil
}

// The streamed encoding is Encode's bytes, with the image read from a
// spool (in memory and in a file); the streamed decoding gives Decode's
// file, the image written out, and fails exactly where Decode does.
func TestStreamedFormatIsEncodeAndDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		var image []byte
		if i%2 == 0 {
			image = make([]byte, []int{0, 512, 3 << 20}[i%3])
			for j := 0; j < len(image); j += 97 {
				image[j] = byte(r.Uint32())
			}
		}
		f := randomFile(r, image)
		want, err := Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		var sp *imagespool.Spool
		if image != nil {
			if sp, err = imagespool.Of(t.TempDir(), image); err != nil {
				t.Fatal(err)
			}
			g := *f
			g.Records = append([]Record{{Seq: f.Records[0].Seq, Kind: KindImage}}, f.Records[1:]...)
			f = &g // the image comes from the spool only
		}
		var src *io.SectionReader
		if sp != nil {
			src = sp.Reader()
		}
		rd, n, err := encodeStream(f, src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rd)
		if err != nil || !bytes.Equal(got, want) || n != int64(len(want)) {
			t.Fatalf("file %d: streamed %d bytes (declared %d, %v), Encode %d; equal %v", i, len(got), n, err, len(want), bytes.Equal(got, want))
		}
		sp.Close()

		dec, err := Decode(want)
		if err != nil {
			t.Fatal(err)
		}
		img := &memFile{}
		var cs []Record
		sdec, err := decodeStream(bytes.NewReader(want), int64(len(want)), img, func(r Record) error {
			cs = append(cs, Record{Seq: r.Seq, Kind: r.Kind, Data: bytes.Clone(r.Data)})
			return nil
		})
		if err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
		var wantCS []Record
		for _, r := range dec.Records {
			if r.Kind == KindChangeset {
				wantCS = append(wantCS, r)
			}
		}
		if dec.Snapshot() && !bytes.Equal(img.b, dec.Records[0].Data) || !reflect.DeepEqual(cs, wantCS) ||
			sdec.Cell != dec.Cell || sdec.Epoch != dec.Epoch || sdec.MinSeq != dec.MinSeq || sdec.MaxSeq != dec.MaxSeq ||
			sdec.Timestamp != dec.Timestamp || len(sdec.Records) != len(dec.Records) {
			t.Fatalf("file %d: the streamed decoding differs from Decode's", i)
		}
	}
	// Damage: every flipped byte and every truncation of a small file.
	data, _ := Encode(sampleFile())
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x40
		if _, err := decodeStream(bytes.NewReader(bad), int64(len(bad)), &memFile{}, nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flipping byte %d: %v", i, err)
		}
	}
	for n := 0; n < len(data); n++ {
		if _, err := decodeStream(bytes.NewReader(data[:n]), int64(n), &memFile{}, nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
}

// A log restored through the streamed path (RestoreWith, the changesets
// spooled, the image copied out page by page) gives the bytes the whole
// path gives (the files read whole, Restore, ApplyChangeset, Serialize),
// on the same log: snapshots, changesets, a second snapshot, changesets.
func TestStreamedRestoreIsByteIdentical(t *testing.T) {
	ctx := context.Background()
	peak := &synthdb.HeapPeak{}
	d := synthdb.New(3, peak, false) // over the spool's 1 MiB: streamed uploads
	s := memstore.New()
	lg, _ := New(Options{Store: s, Logger: quiet})
	cl, err := lg.Open(ctx, durability.OpenRequest{Cell: "C:1", Epoch: 1, Conn: d})
	if err != nil {
		t.Fatal(err)
	}
	for v := uint32(1); v <= 8; v++ {
		d.Write(v, 1, v+1, d.Count-v)
		if v == 4 {
			d.Schema++
		}
		if err := waitDurable(t, cl.Append(durability.Commit{Seq: uint64(v)})); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	restore := func(streamed bool) []byte {
		out := &memFile{}
		scratch := func(ctx context.Context) (driver.Conn, error) {
			c := synthdb.New(0, peak, false)
			if !streamed {
				return synthdb.Whole{Conn: c}, nil
			}
			return c, nil
		}
		if _, err := Mode().Restore(ctx, s, "C:1", durability.RestoreRequest{Scratch: scratch}, out); err != nil {
			t.Fatal(err)
		}
		return out.b
	}
	whole, streamed := restore(false), restore(true)
	if len(whole) != int(d.Count)*synthdb.PageSize || !bytes.Equal(whole, streamed) {
		t.Fatalf("streamed restore: %d bytes, whole: %d, equal %v", len(streamed), len(whole), bytes.Equal(whole, streamed))
	}
}

// refusing declines RestoreWith without filling anything.
type refusing struct{ *synthdb.Conn }

var errRefused = errors.New("refused: inside a transaction")

func (refusing) RestoreWith(ctx context.Context, fill func(w driver.ImageFile) error) error {
	return errRefused
}

// A connection that refuses RestoreWith before filling fails the restore
// with its error (one that answers driver.ErrUnsupported is read whole).
func TestStreamedRestoreRefusedByTheConnection(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	d := synthdb.New(1, &synthdb.HeapPeak{}, false)
	lg, _ := New(Options{Store: s, Logger: quiet})
	cl, err := lg.Open(ctx, durability.OpenRequest{Cell: "C:1", Epoch: 1, Conn: d})
	if err != nil {
		t.Fatal(err)
	}
	d.Write(1, 1)
	if err := waitDurable(t, cl.Append(durability.Commit{Seq: 1})); err != nil {
		t.Fatal(err)
	}
	cl.Close(ctx, true)
	if _, err := Restore(ctx, s, "C:1", refusing{synthdb.New(0, &synthdb.HeapPeak{}, false)}); !errors.Is(err, errRefused) {
		t.Fatalf("restore into a refusing connection: %v", err)
	}
}

// lostAnswer stores the first create-only streamed write of key, then
// answers it as if the key had been taken (the write's answer was lost and
// a retry found the object); with other set, another writer's bytes are
// stored there first instead.
type lostAnswer struct {
	*memstore.Store
	key   string
	other bool
	done  bool
}

func (s *lostAnswer) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	if key != s.key || s.done {
		return s.Store.PutFrom(ctx, key, r, size, opts)
	}
	s.done = true
	if s.other {
		if _, err := s.Store.Put(ctx, key, []byte("another writer's snapshot"), store.PutOptions{}); err != nil {
			return "", err
		}
		return s.Store.PutFrom(ctx, key, r, size, opts)
	}
	if _, err := s.Store.PutFrom(ctx, key, r, size, opts); err != nil {
		return "", err
	}
	return "", store.ErrPreconditionFailed
}

// A streamed (over 1 MiB) create-only first file whose key is taken is
// this log's own when size and CRC trailer match, another writer's
// (*durability.EpochInUseError) otherwise.
func TestStreamedFirstFileCollision(t *testing.T) {
	ctx := context.Background()
	for _, other := range []bool{false, true} {
		s := &lostAnswer{Store: memstore.New(), key: Key("C:1", 1, 1, 1, true), other: other}
		d := synthdb.New(3, &synthdb.HeapPeak{}, false)
		lg, _ := New(Options{Store: s, Logger: quiet, UploadRetries: -1})
		cl, err := lg.Open(ctx, durability.OpenRequest{Cell: "C:1", Epoch: 1, Conn: d})
		if err != nil {
			t.Fatal(err)
		}
		d.Write(1, 1)
		err = waitDurable(t, cl.Append(durability.Commit{Seq: 1}))
		cl.Close(ctx, false)
		var eu *durability.EpochInUseError
		switch {
		case !other && err != nil:
			t.Fatalf("own write found again: %v", err)
		case other && !errors.As(err, &eu):
			t.Fatalf("another writer's file: %v, want *durability.EpochInUseError", err)
		}
	}
}
