package shard

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
)

// TestOfVectors pins the placement. These values are part of every
// deployment's on-disk contract: if this test fails, cells would move to
// other shards on upgrade. Do not update the table; fix the code.
func TestOfVectors(t *testing.T) {
	vectors := []struct {
		key                  string
		hash                 uint64 // FNV-1a 64 of the key
		of1, of7, of16, of4k int
	}{
		// The first three are the FNV authors' published FNV-1a 64 values.
		{"", 0xcbf29ce484222325, 0, 2, 5, 805},
		{"a", 0xaf63dc4c8601ec8c, 0, 5, 12, 3212},
		{"foobar", 0x85944171f73967e8, 0, 6, 8, 2024},
		{"Counter:alpha", 0x3e41cae906f9580d, 0, 5, 13, 2061},
		{"Counter:5b7f3a0c1e9d4b2a8f6e0d1c2b3a4958", 0xa3a97be54107992d, 0, 3, 13, 2349},
		{"Room:lobby", 0x4b510591d343ce98, 0, 3, 8, 3736},
		{"Counter:é", 0x51c26946b5841993, 0, 6, 3, 2451},
	}
	for _, v := range vectors {
		got := []int{Of(v.key, 1), Of(v.key, 7), Of(v.key, 16), Of(v.key, 4096)}
		want := []int{v.of1, v.of7, v.of16, v.of4k}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Of(%q, 1/7/16/4096) = %v, want %v", v.key, got, want)
		}
		if got := int(v.hash % 1000003); Of(v.key, 1000003) != got {
			t.Errorf("Of(%q, 1000003) = %d, want %d", v.key, Of(v.key, 1000003), got)
		}
	}
}

// TestOfIsFNV1a64: the hand-written loop agrees with the standard
// library's FNV-1a on arbitrary keys and counts.
func TestOfIsFNV1a64(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		key := make([]byte, r.IntN(80))
		for j := range key {
			key[j] = byte(r.UintN(256))
		}
		n := 1 + r.IntN(5000)
		h := fnv.New64a()
		h.Write(key)
		if got, want := Of(string(key), n), int(h.Sum64()%uint64(n)); got != want {
			t.Fatalf("Of(%q, %d) = %d, want %d", key, n, got, want)
		}
	}
}

// TestOfSpreads: 16 shards get a fair share of typical keys (a sanity
// check of the choice, not of the arithmetic).
func TestOfSpreads(t *testing.T) {
	var counts [16]int
	const keys = 16000
	for i := 0; i < keys; i++ {
		counts[Of(fmt.Sprintf("Counter:user-%d", i), 16)]++
	}
	for i, c := range counts {
		if c < keys/16*8/10 || c > keys/16*12/10 {
			t.Errorf("shard %d got %d of %d keys", i, c, keys)
		}
	}
}

func TestOfPanicsOnNoShards(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Of(key, 0) did not panic")
		}
	}()
	Of("Counter:x", 0)
}
