package wasm

import "github.com/cellb/cellb/core/driver"

// pendingStore holds captured commits until TakeCommits hands them over.
//
// Commits are captured from inside SQLite's call stack (a VFS write or
// unlock), which the Wasm translation makes very deep, with huge frames.
// Allocating there is costly: a garbage collection that starts then has to
// scan that whole stack. So the store copies pages into buffers it reuses,
// and the allocations the caller keeps are made in take, back in the
// driver's own code.
type pendingStore struct {
	commits []pendingCommit
	pgnos   []uint32
	data    []byte
	// chunk is the unused end of the memory take hands pages out of.
	// Page-sized allocations one by one cost several microseconds each in
	// the Go allocator; carving them from larger chunks costs almost
	// nothing. A chunk stays alive while any page cut from it does.
	chunk []byte
}

// chunkSize is the size of the chunks take carves pages from.
const chunkSize = 256 << 10

type pendingCommit struct {
	pageSize  int
	pageCount uint32
	first, n  int // pages are pgnos[first:first+n], their bytes data[off:]
	off       int
}

// keepLimit bounds the buffers kept between commits: a rare huge
// transaction should not pin its size forever.
const keepLimit = 8 << 20

// begin starts a commit; its pages follow with page or room.
func (s *pendingStore) begin(pageSize int, pageCount uint32) {
	s.commits = append(s.commits, pendingCommit{pageSize: pageSize, pageCount: pageCount, first: len(s.pgnos), off: len(s.data)})
}

// page adds a page with its content to the commit begun last.
func (s *pendingStore) page(pgno uint32, content []byte) {
	s.pgnos = append(s.pgnos, pgno)
	s.data = append(s.data, content...)
	s.commits[len(s.commits)-1].n++
}

// room adds a page to the commit begun last and returns the space for its
// content, to be filled by the caller before any other call.
func (s *pendingStore) room(pgno uint32) []byte {
	c := &s.commits[len(s.commits)-1]
	s.pgnos = append(s.pgnos, pgno)
	at := len(s.data)
	s.data = append(s.data, make([]byte, c.pageSize)...)
	c.n++
	return s.data[at : at+c.pageSize]
}

// drop forgets the commit begun last (its capture failed).
func (s *pendingStore) drop() {
	c := s.commits[len(s.commits)-1]
	s.commits = s.commits[:len(s.commits)-1]
	s.pgnos = s.pgnos[:c.first]
	s.data = s.data[:c.off]
}

// take returns the commits, in newly allocated memory, and empties the
// store.
func (s *pendingStore) take() []driver.CapturedCommit {
	if len(s.commits) == 0 {
		return nil
	}
	var data []byte
	if need := len(s.data); need > chunkSize {
		// A large batch keeps the store's own buffer rather than a copy.
		data, s.data = s.data[:need:need], nil
	} else {
		if need > len(s.chunk) {
			s.chunk = make([]byte, chunkSize)
		}
		data = s.chunk[:need:need]
		s.chunk = s.chunk[need:]
		copy(data, s.data)
	}
	pages := make([]driver.Page, len(s.pgnos))
	out := make([]driver.CapturedCommit, len(s.commits))
	for i, c := range s.commits {
		for k := range c.n {
			at := c.off + k*c.pageSize
			pages[c.first+k] = driver.Page{Pgno: s.pgnos[c.first+k], Data: data[at : at+c.pageSize : at+c.pageSize]}
		}
		out[i] = driver.CapturedCommit{PageSize: c.pageSize, PageCount: c.pageCount, Pages: pages[c.first : c.first+c.n : c.first+c.n]}
	}
	s.reset()
	return out
}

// reset empties the store, keeping its buffers unless they grew large.
func (s *pendingStore) reset() {
	s.commits = s.commits[:0]
	s.pgnos = s.pgnos[:0]
	s.data = s.data[:0]
	if cap(s.data) > keepLimit {
		s.data = nil
		s.pgnos = nil
	}
}
