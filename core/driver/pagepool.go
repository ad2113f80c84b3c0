package driver

import (
	"math/bits"
	"sync"
)

// PagePool recycles page buffers between a capturing connection, which
// copies each commit's pages into buffers it takes from the pool, and the
// durability log, which hands them back (CapturedCommit.Release) once it
// has encoded them. A small transaction then costs no fresh page-sized
// allocation: on a busy cell the allocation, its zeroing and the garbage
// collection it drives were the larger part of what page capture added to
// a single-row commit (docs/benchmarks.md).
//
// Returning buffers is optional: pages nobody releases are simply
// collected by the garbage collector. Buffers held in the pool are dropped
// by the garbage collector too (the pool is built on sync.Pool), so an idle
// pool holds no memory for long and needs no limit.
//
// The zero value is ready to use; a PagePool is safe for concurrent use
// and must not be copied after first use.
type PagePool struct {
	// bySize holds one sync.Pool per valid SQLite page size (512 to
	// 65536 bytes, the powers of two), indexed by log2(size) - 9.
	bySize [8]sync.Pool
}

// poisonByte fills released buffers, so that a consumer still reading a
// page after releasing it sees bytes no database page is likely to hold,
// and a byte-for-byte check fails loudly instead of passing by luck.
const poisonByte = 0xDB

func poolIndex(size int) (int, bool) {
	if size < 512 || size > 65536 || size&(size-1) != 0 {
		return 0, false
	}
	return bits.TrailingZeros(uint(size)) - 9, true
}

// Get returns a buffer of exactly size bytes whose contents are
// unspecified (the caller overwrites all of it). A nil pool, or a size that
// is not a SQLite page size, allocates.
func (p *PagePool) Get(size int) []byte {
	i, ok := poolIndex(size)
	if p == nil || !ok {
		return make([]byte, size)
	}
	if v := p.bySize[i].Get(); v != nil {
		b := v.(*pageBuffer)
		return b.data[:size:size]
	}
	return make([]byte, size)
}

// Put hands b back for reuse. The caller must not use b afterwards: its
// bytes are overwritten at once and it may be handed out again. Buffers
// that Get could not have returned (other sizes) are left to the garbage
// collector.
func (p *PagePool) Put(b []byte) {
	i, ok := poolIndex(cap(b))
	if p == nil || !ok || len(b) != cap(b) {
		return
	}
	b[0] = poisonByte
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
	p.bySize[i].Put(&pageBuffer{data: b})
}

// pageBuffer boxes a buffer for sync.Pool, which stores interface values.
type pageBuffer struct{ data []byte }

// Release hands the commit's page buffers back to the pool they came from
// (Pool), if any, and clears Pages. A consumer calls it once it no longer
// reads the pages, and at most once: the commit's pages must not be read
// afterwards, by it or by anyone it shared them with.
func (c *CapturedCommit) Release() {
	if c.Pool != nil {
		for _, pg := range c.Pages {
			c.Pool.Put(pg.Data)
		}
	}
	c.Pool = nil
	c.Pages = nil
}
