package durability_test

import (
	"errors"
	"sort"
	"testing"

	"github.com/cellb/cellb/core/durability"
)

// Bookmarks sort as strings in commit order: by epoch, then TXID, with
// numbers of any width (a TXID past 0xf must not sort before 0x2).
func TestBookmarkOrderAndText(t *testing.T) {
	in := []durability.Bookmark{{0, 1}, {0, 2}, {0, 0x10}, {1, 1}, {2, 3}, {2, 0xffff}, {0x10, 1}, {1 << 40, 7}}
	texts := make([]string, len(in))
	for i, b := range in {
		texts[i] = b.String()
		back, err := durability.ParseBookmark(texts[i])
		if err != nil || back != b {
			t.Fatalf("ParseBookmark(%q) = %+v, %v; want %+v", texts[i], back, err, b)
		}
	}
	if !sort.StringsAreSorted(texts) {
		t.Fatalf("bookmarks in commit order do not sort as strings: %q", texts)
	}
	if got := (durability.Bookmark{Epoch: 3, TXID: 0x2a}).String(); got != "0000000000000003-000000000000002a" {
		t.Fatalf("String() = %q", got)
	}
	for _, bad := range []string{"", "3-2a", "0000000000000003-000000000000002A", "0000000000000003_000000000000002a",
		"0000000000000003-000000000000002a0", "+000000000000003-000000000000002a"} {
		_, err := durability.ParseBookmark(bad)
		var se *durability.BookmarkSyntaxError
		if !errors.As(err, &se) {
			t.Errorf("ParseBookmark(%q): %v, want a *BookmarkSyntaxError", bad, err)
		}
	}
}
