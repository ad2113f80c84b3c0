package layout

import "testing"

func TestParseLitestreamKey(t *testing.T) {
	for _, c := range []struct {
		key      string
		level    int
		min, max uint64
		ok       bool
	}{
		{"ltx/0/0000000000000001-0000000000000001.ltx", 0, 1, 1, true},
		{"ltx/9/0000000000000001-00000000000000ff.ltx", 9, 1, 255, true},
		{"ltx/1/0000000000000002-0000000000000007.ltx", 1, 2, 7, true},
		{"ltx/0000/0000000000000001-0000000000000001.ltx", 0, 0, 0, false}, // a cell log's level
		{"ltx/10/0000000000000001-0000000000000001.ltx", 0, 0, 0, false},
		{"ltx/0/0000000000000002-0000000000000001.ltx", 0, 0, 0, false},
		{"ltx/0/notes.txt", 0, 0, 0, false},
		{"ltx/0/x/0000000000000001-0000000000000001.ltx", 0, 0, 0, false},
		{"cells/A:b/ltx/e1/0000/0000000000000001-0000000000000001.ltx", 0, 0, 0, false},
	} {
		lv, min, max, ok := ParseLitestreamKey(c.key)
		if ok != c.ok || ok && (lv != c.level || min != c.min || max != c.max) {
			t.Errorf("%s: %d %d %d %v, want %d %d %d %v", c.key, lv, min, max, ok, c.level, c.min, c.max, c.ok)
		}
	}
}
