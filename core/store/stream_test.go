package store_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// wholeOnly hides memstore's streaming, to test the fallback.
type wholeOnly struct{ store.Store }

func TestCheckRange(t *testing.T) {
	for _, c := range []struct {
		off, length, size, want int64
		bad                     bool
	}{
		{0, -1, 10, 10, false}, {0, 1, 10, 1, false}, {9, 1, 10, 1, false}, {9, 5, 10, 1, false},
		{10, 5, 10, 0, false}, {0, 0, 0, 0, false}, {11, 1, 10, 0, true}, {-1, 1, 10, 0, true}, {1, -1, 0, 0, true},
	} {
		got, err := store.CheckRange("get", "k", c.off, c.length, c.size)
		if c.bad != errors.Is(err, store.ErrInvalidRange) || (!c.bad && got != c.want) {
			t.Errorf("CheckRange(%d, %d, %d) = %d, %v", c.off, c.length, c.size, got, err)
		}
	}
}

func TestBodyChecksDeclaredSizeAndContext(t *testing.T) {
	ctx := t.Context()
	for _, c := range []struct {
		n, size int
		bad     bool
	}{{10, 10, false}, {10, -1, false}, {9, 10, true}, {11, 10, true}, {0, 0, false}, {1, 0, true}} {
		_, err := io.ReadAll(store.Body(ctx, bytes.NewReader(make([]byte, c.n)), int64(c.size)))
		if c.bad != errors.Is(err, store.ErrBodySize) {
			t.Errorf("%d bytes declared %d: %v", c.n, c.size, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := io.ReadAll(store.Body(cctx, bytes.NewReader(make([]byte, 10)), -1)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled body: %v", err)
	}
}

func TestFallbackStreamsOverWholeObjects(t *testing.T) {
	ctx := t.Context()
	for _, s := range []store.Store{memstore.New(), wholeOnly{memstore.New()}} {
		p, _ := store.WithPrefix(s, "p")
		for _, st := range []store.Store{s, p} {
			v, err := store.PutFrom(ctx, st, "k", bytes.NewReader([]byte("0123456789")), -1, store.PutOptions{Metadata: map[string]string{"a": "b"}})
			if err != nil {
				t.Fatal(err)
			}
			r, err := store.NewRangeReader(ctx, st, "k", 3, 4)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r)
			if string(b) != "3456" || r.Version != v || r.Size != 10 || r.Length != 4 || r.Key != "k" || r.Metadata["a"] != "b" {
				t.Fatalf("%T: range read %q %+v", st, b, r)
			}
			if _, err := store.NewRangeReader(ctx, st, "k", 11, 1); !errors.Is(err, store.ErrInvalidRange) {
				t.Fatalf("%T: past the end: %v", st, err)
			}
			_, err = store.PutFrom(ctx, st, "k", io.MultiReader(bytes.NewReader([]byte("xx")), iotestErr{}), -1, store.PutOptions{})
			if !errors.Is(err, errBody) {
				t.Fatalf("%T: failing body: %v", st, err)
			}
			if o, _ := st.Get(ctx, "k"); o.Version != v {
				t.Fatalf("%T: a failing body replaced the object", st)
			}
		}
	}
}

var errBody = errors.New("body failed")

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errBody }
