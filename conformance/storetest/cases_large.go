package storetest

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/cellb/cellb/core/store"
)

// largeBody makes n bytes that differ per run and per offset, so a torn,
// shifted or truncated object cannot compare equal by accident.
func largeBody(seed string, n int) []byte {
	h := fnv.New64a()
	h.Write([]byte(seed))
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], h.Sum64())
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b)
	return b
}

func testLargeObject(t tb, e *env) {
	ctx, k, n := e.ctx, e.key("large"), e.cfg.largeSize
	size := sizeString(n)
	if n < DefaultLargeObjectSize {
		t.Logf("size lowered to %s by option (default %s)", size, sizeString(DefaultLargeObjectSize))
	}
	want := largeBody(e.prefix, n)

	e.progressf("uploading %s", size)
	start := time.Now()
	v := mustPut(t, ctx, e.s, k, want, store.PutOptions{})
	e.progressf("uploaded %s in %v (%s)", size, roundDuration(time.Since(start)), rate(n, time.Since(start)))

	e.progressf("downloading %s with the other client", size)
	start = time.Now()
	o := mustGet(t, ctx, e.s2, k)
	e.progressf("downloaded %s in %v (%s)", size, roundDuration(time.Since(start)), rate(n, time.Since(start)))
	if o.Version != v {
		t.Errorf("read version %q, want %q", o.Version, v)
	}
	if len(o.Data) != n {
		t.Errorf("read %d bytes, wrote %d", len(o.Data), n)
	}
	if !bytes.Equal(o.Data, want) {
		i := 0
		for i < len(o.Data) && i < n && o.Data[i] == want[i] {
			i++
		}
		t.Errorf("the object read back differs from the one written, first at byte %d of %d", i, n)
	}
	o = nil // let the copy go before listing

	l := listChecked(t, ctx, e.s, store.ListOptions{Prefix: k})
	if len(l.objects) != 1 || l.objects[0].Size != int64(n) {
		t.Errorf("listing of the large object: %+v, want one object of %d bytes", l.objects, n)
	}
}

func rate(n int, d time.Duration) string {
	if d <= 0 {
		return "instant"
	}
	return strconv.FormatFloat(float64(n)/(1<<20)/d.Seconds(), 'f', 1, 64) + " MiB/s"
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(10 * time.Millisecond)
	default:
		return d.Round(time.Microsecond)
	}
}
