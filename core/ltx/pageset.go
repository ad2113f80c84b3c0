package ltx

// pageSet records which pages an image holds, in chunks of 65,536 pages
// allocated as pages arrive, so its memory follows the pages a chain
// actually supplies, not the size a file's header claims (a corrupt
// Commit of four billion pages must not allocate before the file is
// refused).
type pageSet struct {
	chunks map[uint32]*[chunkWords]uint64
}

const (
	chunkBits  = 16
	chunkPages = 1 << chunkBits
	chunkWords = chunkPages / 64
)

func (s *pageSet) set(pgno uint32) {
	i := pgno - 1
	if s.chunks == nil {
		s.chunks = map[uint32]*[chunkWords]uint64{}
	}
	c := s.chunks[i>>chunkBits]
	if c == nil {
		c = new([chunkWords]uint64)
		s.chunks[i>>chunkBits] = c
	}
	o := i & (chunkPages - 1)
	c[o/64] |= 1 << (o % 64)
}

func (s *pageSet) has(pgno uint32) bool {
	i := pgno - 1
	c := s.chunks[i>>chunkBits]
	if c == nil {
		return false
	}
	o := i & (chunkPages - 1)
	return c[o/64]&(1<<(o%64)) != 0
}

// truncate forgets the pages after commit.
func (s *pageSet) truncate(commit uint32) {
	for k, c := range s.chunks {
		first := k << chunkBits // index of the chunk's first page
		switch {
		case first >= commit:
			delete(s.chunks, k)
		case commit-first < chunkPages:
			// Pages commit-first+1.. of the chunk (offsets commit-first..)
			// go: the rest of the word holding the first, then whole words.
			o := commit - first
			c[o/64] &= 1<<(o%64) - 1
			clear(c[o/64+1:])
		}
	}
}

// firstMissing is the lowest page of 1..commit, other than skip, that is
// not in the set, or 0 when there is none. A chunk never allocated is
// missing at its first page (or the one after skip), without looking at
// its pages one by one.
func (s *pageSet) firstMissing(commit, skip uint32) uint32 {
	for first := uint32(0); first < commit; first += chunkPages {
		c := s.chunks[first>>chunkBits]
		last := min(commit-first, chunkPages) // pages of this chunk within 1..commit
		for o := uint32(0); o < last; o++ {
			if c != nil && o%64 == 0 && o+64 <= last && c[o/64] == ^uint64(0) {
				o += 63 // 64 pages present
				continue
			}
			pgno := first + o + 1
			if pgno == skip {
				continue
			}
			if c == nil || c[o/64]&(1<<(o%64)) == 0 {
				return pgno
			}
		}
		if first+chunkPages < first { // wrapped past the last page number
			break
		}
	}
	return 0
}
