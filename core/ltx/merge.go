package ltx

import (
	"fmt"
	"slices"

	"github.com/cellb/cellb/core/page"
)

// MergeFiles merges contiguous LTX files, oldest first, into one file
// spanning their TXIDs, as celld's compactor merges level-0 files: the
// newest copy of a page wins, a file's Commit drops the pages past it that
// earlier files wrote, and the result takes MinTXID from the first file and
// MaxTXID, Commit and Timestamp from the last (NoChecksum, block pages).
// Every input is decoded and verified first; a gap or an overlap between
// two files, or a change of page size, is refused.
func MergeFiles(files [][]byte) ([]byte, Header, error) {
	if len(files) == 0 {
		return nil, Header{}, fmt.Errorf("%w: nothing to merge", ErrInvalidInput)
	}
	pages := map[uint32][]byte{}
	var first, last Header
	for i, data := range files {
		f, err := Decode(data)
		if err != nil {
			return nil, Header{}, err
		}
		h := f.Header
		switch {
		case i == 0:
			first = h
		case h.PageSize != last.PageSize:
			return nil, Header{}, fmt.Errorf("%w: page size changes from %d to %d at TXID %d", ErrInvalidInput, last.PageSize, h.PageSize, h.MinTXID)
		case h.MinTXID != last.MaxTXID+1:
			return nil, Header{}, fmt.Errorf("%w: TXIDs %d-%d do not follow %d-%d", ErrInvalidInput, h.MinTXID, h.MaxTXID, last.MinTXID, last.MaxTXID)
		}
		for pgno := range pages {
			if pgno > h.Commit {
				delete(pages, pgno)
			}
		}
		for _, p := range f.Pages {
			pages[p.Pgno] = p.Data
		}
		last = h
	}
	out := make([]page.Page, 0, len(pages))
	for pgno, data := range pages {
		out = append(out, page.Page{Pgno: pgno, Data: data})
	}
	slices.SortFunc(out, func(a, b page.Page) int { return int(int64(a.Pgno) - int64(b.Pgno)) })
	h := Header{
		PageSize: last.PageSize, Commit: last.Commit,
		MinTXID: first.MinTXID, MaxTXID: last.MaxTXID, Timestamp: last.Timestamp,
	}
	data, err := Encode(h, out)
	if err != nil {
		return nil, Header{}, err
	}
	return data, h, nil
}
