package shard

// FNV-1a 64-bit parameters.
const (
	fnvOffset64 = 0xcbf29ce484222325
	fnvPrime64  = 0x100000001b3
)

// Of places the cell whose key is key ("<Class>:<id>") in one of n shards,
// returning a shard number in [0, n).
//
// The placement is part of a deployment's on-disk contract and never
// changes: the 64-bit FNV-1a hash of the key's bytes (start from
// 0xcbf29ce484222325; for each byte, XOR it in, then multiply by
// 0x100000001b3, modulo 2^64), reduced modulo n as an unsigned integer. The
// tests pin it with fixed vectors. Changing n moves cells between shards,
// which is why Open refuses a directory laid out for another count.
//
// Of panics if n < 1.
func Of(key string, n int) int {
	if n < 1 {
		panic("shard.Of: the shard count must be at least 1")
	}
	h := uint64(fnvOffset64)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= fnvPrime64
	}
	return int(h % uint64(n))
}
