package modernc

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/driver"
	"modernc.org/libc"
)

// openT opens a database in t's temporary directory (name "" opens an
// in-memory one) and closes it when the test ends.
func openT(t testing.TB, name string, capture bool) *Conn {
	t.Helper()
	return openWith(t, Options{}, name, capture)
}

func openWith(t testing.TB, opts Options, name string, capture bool) *Conn {
	t.Helper()
	path := ""
	if name != "" {
		path = filepath.Join(t.TempDir(), name)
	}
	return openPath(t, opts, path, capture)
}

func openPath(t testing.TB, opts Options, path string, capture bool) *Conn {
	t.Helper()
	dc, err := New(opts).Open(context.Background(), driver.Config{Path: path, PageCapture: capture})
	if err != nil {
		t.Fatalf("Open(%q, capture=%v): %v", path, capture, err)
	}
	var c *Conn
	switch x := dc.(type) {
	case *Conn:
		c = x
	case *CapturingConn:
		c = x.Conn
	default:
		t.Fatalf("Open returned %T", dc)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustExec(t testing.TB, c *Conn, sql string, args ...any) driver.Result {
	t.Helper()
	r, err := c.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("Exec(%s): %v", sql, err)
	}
	return r
}

// queryAll returns every row of sql, with []byte values copied.
func queryAll(t testing.TB, c *Conn, sql string, args ...any) [][]any {
	t.Helper()
	r, err := c.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("Query(%s): %v", sql, err)
	}
	defer r.Close()
	var out [][]any
	for r.Next() {
		row := make([]any, len(r.Values()))
		for i, v := range r.Values() {
			if b, ok := v.([]byte); ok {
				v = append([]byte{}, b...)
			}
			row[i] = v
		}
		out = append(out, row)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("Query(%s): %v", sql, err)
	}
	return out
}

func serializeT(t testing.TB, c *Conn) []byte {
	t.Helper()
	img, err := c.Serialize(context.Background())
	if err != nil {
		t.Fatalf("Serialize: %v", err)
	}
	return img
}

func takeT(t testing.TB, c *Conn) []driver.CapturedCommit {
	t.Helper()
	commits, err := (&CapturingConn{c}).TakeCommits(context.Background())
	if err != nil {
		t.Fatalf("TakeCommits: %v", err)
	}
	return commits
}

// replay applies commits to base the way the durability log does.
func replay(base []byte, commits []driver.CapturedCommit) []byte {
	img := append([]byte{}, base...)
	for _, cm := range commits {
		size := int(cm.PageCount) * cm.PageSize
		if len(img) < size {
			img = append(img, make([]byte, size-len(img))...)
		}
		img = img[:size]
		for _, p := range cm.Pages {
			copy(img[int(p.Pgno-1)*cm.PageSize:], p.Data)
		}
	}
	return img
}

func TestCStringIs(t *testing.T) {
	tls := libc.NewTLS()
	defer tls.Close()
	for _, tc := range []struct {
		c, s string
		want bool
	}{{"main", "main", true}, {"mai", "main", false}, {"mainx", "main", false}, {"temp", "main", false}, {"", "", true}, {"", "main", false}} {
		p, err := cStringAlloc(tls, tc.c)
		if err != nil {
			t.Fatal(err)
		}
		if got := cStringIs(p, tc.s); got != tc.want {
			t.Errorf("cStringIs(%q, %q) = %v", tc.c, tc.s, got)
		}
		cFree(tls, p)
	}
	if cStringIs(0, "") {
		t.Error("a NULL pointer equals a string")
	}
}
