package ltx

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/internal/testvectors"
)

// The six L0 files of ../shared/testdata/celld-ltx-golden, in TXID order,
// with the sha256 and file checksum their README and celld's manifest give.
var golden = []struct {
	name     string
	sha256   string
	checksum uint64
}{
	{"0000000000000001-0000000000000001.ltx", "7c94a5482497ffe04fea81e595a714496526d886a0771e1747427509a3dcc7d4", 0xc32b58ca29a2beac},
	{"0000000000000002-0000000000000002.ltx", "b51b20e62a6bee6a73f699edcdc029a148eb5b4dcc1293f279fa4b2f8f6af87a", 0x90eb884139e49ce1},
	{"0000000000000003-0000000000000003.ltx", "21d8ee050b708671d0ec81951b5233dc7377ef3714e073671c7a76179f9e64d8", 0xfbd74afa05ab48aa},
	{"0000000000000004-0000000000000004.ltx", "e07ac074da97eba4f589ecb12f2b5ca4d2f75961b129b37383180acaae3dbf58", 0xa96f7117e2df5699},
	{"0000000000000005-0000000000000005.ltx", "3a7df36075b697884c3bc7e20a42449bb8a7479e2ef6e8152e2f724a955a8a36", 0xb45c5913631701de},
	{"0000000000000006-0000000000000006.ltx", "63ae1bd243decb488f8a704afd3c5cc726ff05efa70d4b53d960a49fe9f5a2bd", 0xbc736f92bff46d6a},
}

func loadGolden(t testing.TB) [][]byte {
	dir := filepath.Join(testvectors.Dir(t, "celld-ltx-golden"), "replica", "ltx", "0")
	var out [][]byte
	for _, g := range golden {
		b, err := os.ReadFile(filepath.Join(dir, g.name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != g.sha256 {
			t.Fatalf("%s: sha256 %x does not match the vector's README", g.name, sum)
		}
		out = append(out, b)
	}
	return out
}

func TestGoldenDecode(t *testing.T) {
	files := loadGolden(t)
	for i, b := range files {
		f, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", golden[i].name, err)
		}
		h := f.Header
		txid := TXID(i + 1)
		if h.MinTXID != txid || h.MaxTXID != txid || h.PageSize != 4096 || h.Commit != 5 || h.Flags != HeaderFlagNoChecksum {
			t.Errorf("%s: header %+v", golden[i].name, h)
		}
		if f.FileChecksum != golden[i].checksum|1<<63 && f.FileChecksum != golden[i].checksum {
			t.Errorf("%s: file checksum %016x, want %016x", golden[i].name, f.FileChecksum, golden[i].checksum)
		}
		if f.PostApplyChecksum != 0 || h.PreApplyChecksum != 0 {
			t.Errorf("%s: checksums tracked on a NoChecksum file", golden[i].name)
		}
		if len(f.Pages) != 5 {
			t.Errorf("%s: %d pages, want 5", golden[i].name, len(f.Pages))
		}
		if err := Verify(b); err != nil {
			t.Errorf("%s: %v", golden[i].name, err)
		}
	}
	if f, _ := Decode(files[0]); !bytes.HasPrefix(f.Pages[0].Data, []byte("SQLite format 3\x00")) {
		t.Error("page 1 of the snapshot is not a SQLite header page")
	}
}

// TestGoldenRestorePrefixes rebuilds every prefix of the chain. What the rows
// are is checked with real SQLite by the drivers' and the CLI's tests; here
// each prefix must be a whole, WAL-mode image whose page 1 changes as the
// chain advances.
func TestGoldenRestorePrefixes(t *testing.T) {
	files := loadGolden(t)
	var infos []FileInfo
	var decoded []*File
	for i, b := range files {
		f, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		decoded = append(decoded, f)
		infos = append(infos, FileInfo{Key: "k", Level: 0, MinTXID: TXID(i + 1), MaxTXID: TXID(i + 1)})
	}
	var prev []byte
	for n := 1; n <= len(files); n++ {
		plan, err := PlanTo(infos, TXID(n))
		if err != nil {
			t.Fatalf("plan to %d: %v", n, err)
		}
		if len(plan) != n {
			t.Fatalf("plan to %d has %d files", n, len(plan))
		}
		im := NewImage()
		for _, p := range plan {
			if err := im.Apply(decoded[p.MinTXID-1]); err != nil {
				t.Fatal(err)
			}
		}
		img, err := im.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if len(img) != 5*4096 {
			t.Fatalf("image of %d bytes", len(img))
		}
		if img[18] != 2 || img[19] != 2 {
			t.Errorf("prefix %d: header bytes 18/19 = %d/%d, want WAL mode 2/2", n, img[18], img[19])
		}
		if prev != nil && bytes.Equal(prev, img) {
			t.Errorf("prefix %d equals prefix %d", n, n-1)
		}
		prev = append([]byte(nil), img...)
	}
}

// TestGoldenCorruptionDetected flips every byte region of a golden file and
// expects a typed error rather than a silently different file.
func TestGoldenCorruptionDetected(t *testing.T) {
	files := loadGolden(t)
	orig := files[1]
	want, err := Decode(orig)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(orig); i++ {
		b := append([]byte(nil), orig...)
		b[i] ^= 0x5a
		f, err := Decode(b)
		if err == nil {
			// A flip in an ignored region may decode, but it must then
			// decode to the same content.
			if !sameContent(f, want) {
				t.Fatalf("byte %d flipped: decoded to different content without an error", i)
			}
			continue
		}
		if !isCorrupt(err) {
			t.Fatalf("byte %d flipped: untyped error %v", i, err)
		}
	}
	for n := 0; n < len(orig); n += 7 {
		if _, err := Decode(orig[:n]); err == nil || !isCorrupt(err) {
			t.Fatalf("truncated to %d bytes: err = %v", n, err)
		}
	}
}

func sameContent(a, b *File) bool {
	if a.Header != b.Header || len(a.Pages) != len(b.Pages) {
		return false
	}
	for i := range a.Pages {
		if a.Pages[i].Pgno != b.Pages[i].Pgno || !bytes.Equal(a.Pages[i].Data, b.Pages[i].Data) {
			return false
		}
	}
	return true
}
