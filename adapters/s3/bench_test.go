package s3_test

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cellb/cellb/core/store"
)

// The three writes CellB's protocols are made of, against the local test
// server: a create-only put, a compare-and-swap and a 1 MiB plain put.
// The tests module's BenchmarkBuckets runs the same on every adapter at once,
// with the local-directory store as the baseline.

func BenchmarkCreateOnly(b *testing.B) {
	st := openServer(b, nil)
	body := make([]byte, 128)
	rand.Read(body)
	for i := 0; b.Loop(); i++ {
		binary.BigEndian.PutUint64(body, uint64(i))
		if _, err := st.Put(b.Context(), fmt.Sprintf("k%09d", i), body, store.PutOptions{Condition: store.IfAbsent}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompareAndSwap(b *testing.B) {
	st := openServer(b, nil)
	body := make([]byte, 128)
	rand.Read(body)
	v, err := st.Put(b.Context(), "cas", body, store.PutOptions{Condition: store.IfAbsent})
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; b.Loop(); i++ {
		binary.BigEndian.PutUint64(body, uint64(i)) // unique bodies, unique ETags
		if v, err = st.Put(b.Context(), "cas", body, store.PutOptions{Condition: store.IfVersion(v)}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPut1MiB(b *testing.B) {
	st := openServer(b, nil)
	body := make([]byte, 1<<20)
	rand.Read(body)
	b.SetBytes(int64(len(body)))
	for i := 0; b.Loop(); i++ {
		binary.BigEndian.PutUint64(body, uint64(i))
		if _, err := st.Put(b.Context(), "put", body, store.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
