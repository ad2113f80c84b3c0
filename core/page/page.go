// Package page holds the one thing the SQLite driver port and the page
// formats both speak of: a database page (Page) and the pool its buffers
// are recycled through (Pool).
//
// It is a leaf: it imports no CellB package, so the formats (core/ltx,
// core/wal) carry pages without importing a port. core/driver names the
// same types driver.Page and driver.PagePool (aliases), which is how
// drivers and the runtime spell them.
package page

import (
	"math/bits"
	"sync"
)

// Page is one database page.
type Page struct {
	Pgno uint32
	Data []byte
}

// Pool recycles page buffers between a capturing connection, which copies
// each commit's pages into buffers it takes from the pool, and the
// durability log, which hands them back (driver.CapturedCommit.Release)
// once it has encoded them. A small transaction then costs no fresh
// page-sized allocation: on a busy cell the allocation, its zeroing and the
// garbage collection it drives were the larger part of what page capture
// added to a single-row commit (docs/benchmarks.md).
//
// Returning buffers is optional: pages nobody releases are simply
// collected by the garbage collector. Buffers held in the pool are dropped
// by the garbage collector too (the pool is built on sync.Pool), so an idle
// pool holds no memory for long and needs no limit.
//
// The zero value is ready to use; a Pool is safe for concurrent use and
// must not be copied after first use.
type Pool struct {
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
func (p *Pool) Get(size int) []byte {
	i, ok := poolIndex(size)
	if p == nil || !ok {
		return make([]byte, size)
	}
	if v := p.bySize[i].Get(); v != nil {
		b := v.(*buffer)
		return b.data[:size:size]
	}
	return make([]byte, size)
}

// Put hands b back for reuse. The caller must not use b afterwards: its
// bytes are overwritten at once and it may be handed out again. Buffers
// that Get could not have returned (other sizes) are left to the garbage
// collector.
func (p *Pool) Put(b []byte) {
	i, ok := poolIndex(cap(b))
	if p == nil || !ok || len(b) != cap(b) {
		return
	}
	b[0] = poisonByte
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
	p.bySize[i].Put(&buffer{data: b})
}

// buffer boxes a buffer for sync.Pool, which stores interface values.
type buffer struct{ data []byte }
