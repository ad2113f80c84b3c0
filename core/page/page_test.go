package page

import (
	"bytes"
	"testing"
)

func TestPoolGetSizes(t *testing.T) {
	var p Pool
	for _, size := range []int{512, 4096, 65536, 1000, 131072} {
		b := p.Get(size)
		if len(b) != size || cap(b) != size {
			t.Errorf("Get(%d): len %d cap %d", size, len(b), cap(b))
		}
	}
	var nilPool *Pool
	if b := nilPool.Get(4096); len(b) != 4096 {
		t.Errorf("nil pool Get: len %d", len(b))
	}
	nilPool.Put(make([]byte, 4096)) // must not panic
}

// A buffer handed back is poisoned at once, so a reader that kept it sees
// the fault rather than plausible stale bytes.
func TestPutPoisons(t *testing.T) {
	var p Pool
	data := p.Get(4096)
	for i := range data {
		data[i] = byte(i)
	}
	p.Put(data)
	if !bytes.Equal(data, bytes.Repeat([]byte{poisonByte}, 4096)) {
		t.Fatal("a buffer handed back kept its bytes")
	}
}

// Buffers that are not the pool's kind (a slice of a larger buffer, an
// odd size) are never handed out again.
func TestPutIgnoresForeignBuffers(t *testing.T) {
	var p Pool
	big := make([]byte, 8192)
	p.Put(big[:4096]) // len != cap: part of something else
	odd := make([]byte, 1000)
	p.Put(odd)
	if big[0] == poisonByte || odd[0] == poisonByte {
		t.Fatal("Put wrote into a buffer it does not take")
	}
}

func BenchmarkPoolCycle(b *testing.B) {
	var p Pool
	b.ReportAllocs()
	for b.Loop() {
		p.Put(p.Get(4096))
	}
}
