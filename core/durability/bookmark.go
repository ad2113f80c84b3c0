package durability

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Bookmark names one state of a cell in a log with point-in-time history
// (the LTX log): the state after transaction TXID of epoch Epoch. Its text
// (String) is two fixed-width lowercase hex numbers, so bookmarks sort as
// strings in commit order across epochs: a newer epoch always comes after
// an older one, and within an epoch a later TXID after an earlier one.
type Bookmark struct {
	Epoch uint64
	TXID  uint64
}

// String is the bookmark's text: "<epoch:016x>-<txid:016x>".
func (b Bookmark) String() string { return fmt.Sprintf("%016x-%016x", b.Epoch, b.TXID) }

// IsZero reports whether b is the zero bookmark, the state before the
// cell's first commit (an empty database).
func (b Bookmark) IsZero() bool { return b == Bookmark{} }

// BookmarkSyntaxError: a text is not a bookmark String wrote.
type BookmarkSyntaxError struct {
	Text string
}

func (e *BookmarkSyntaxError) Error() string {
	return fmt.Sprintf("%q is not a bookmark (want <epoch>-<txid>, each 16 lowercase hex digits)", e.Text)
}

// ParseBookmark reads a bookmark's text, exactly as String writes it (so
// a bookmark has one spelling and the string order stays the commit
// order).
func ParseBookmark(s string) (Bookmark, error) {
	if len(s) != 33 || s[16] != '-' {
		return Bookmark{}, &BookmarkSyntaxError{Text: s}
	}
	var b Bookmark
	for i, part := range []string{s[:16], s[17:]} {
		for _, c := range part {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return Bookmark{}, &BookmarkSyntaxError{Text: s}
			}
		}
		n, err := strconv.ParseUint(part, 16, 64)
		if err != nil {
			return Bookmark{}, &BookmarkSyntaxError{Text: s}
		}
		if i == 0 {
			b.Epoch = n
		} else {
			b.TXID = n
		}
	}
	return b, nil
}

// Bookmarks is implemented by a Log whose history can be named by
// bookmarks (the LTX log). Both methods read the bucket only.
type Bookmarks interface {
	// NewestBookmark is the bookmark of the cell's newest state in the
	// bucket; the zero bookmark when the bucket holds nothing for it.
	NewestBookmark(ctx context.Context, cell string) (Bookmark, error)
	// BookmarkForTime is the bookmark of the newest state whose commit
	// time is at or before t, among the states a restore can reach; a
	// *BookmarkTooOldError when t is before the history the bucket keeps.
	BookmarkForTime(ctx context.Context, cell string, t time.Time) (Bookmark, error)
}

// DurableBookmarker is implemented by a CellLog that knows the bookmark
// of the newest state it made durable (or restored at Open): ok is false
// when it has neither, and the bucket's newest state is then the cell's.
type DurableBookmarker interface {
	DurableBookmark() (b Bookmark, ok bool)
}

// BookmarkPinner is implemented by a CellLog some of whose durable states
// are not restorable exactly on their own yet (with a node log, rows still
// in a bundle, which tiering would merge with the rows around them). A
// bookmark it names is made the end of a file in the bucket first, so it
// restores exactly even if the node crashes right after.
type BookmarkPinner interface {
	// PinDurableBookmark is DurableBookmark, the state made a file end
	// first (CurrentBookmark asks it rather than DurableBookmark).
	PinDurableBookmark(ctx context.Context) (b Bookmark, ok bool, err error)
	// PinBookmark runs find (the log's BookmarkForTime, say), which reads
	// the bucket and may name one of those rows, with the log's tiering
	// held, then makes the state it named a file end.
	PinBookmark(ctx context.Context, find func(context.Context) (Bookmark, error)) (Bookmark, error)
}

// NoBookmarksError: bookmarks were asked of a cell whose log keeps no
// point-in-time history (every log but the LTX log).
type NoBookmarksError struct {
	Cell string
}

func (e *NoBookmarksError) Error() string {
	return fmt.Sprintf("%s: bookmarks need the LTX log (its durability mode keeps no point-in-time history)", e.Cell)
}

// BookmarkTooOldError: a bookmark was asked for a time before the oldest
// state the bucket keeps for the cell.
type BookmarkTooOldError struct {
	Cell string
	Time time.Time
	// Oldest is the commit time of the oldest state kept; zero when the
	// bucket holds nothing for the cell.
	Oldest time.Time
}

func (e *BookmarkTooOldError) Error() string {
	if e.Oldest.IsZero() {
		return fmt.Sprintf("no bookmark of %s at or before %s: the bucket holds no history for it",
			e.Cell, e.Time.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("no bookmark of %s at or before %s: its oldest state kept is of %s",
		e.Cell, e.Time.UTC().Format(time.RFC3339Nano), e.Oldest.UTC().Format(time.RFC3339Nano))
}
