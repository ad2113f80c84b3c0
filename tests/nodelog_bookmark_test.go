package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
	"github.com/cellb/cellb/drivers/wasm"
	"github.com/cellb/cellb/examples/counter"
)

// TestNodeLogBookmarksRestoreExactly: on a fleet node's node log, where a
// write's row waits in a bundle until tiering merges it with its
// neighbours, every bookmark the cell hands out — State.CurrentBookmark
// (GET /counter/<name>/bookmark) and State.BookmarkForTime (?at=), also
// one naming a row that is neither tiered nor the newest — restores its
// exact state from the cell's own prefix alone, at once, while later rows
// are still in bundles.
func TestNodeLogBookmarksRestoreExactly(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	node, err := fleet.Join(ctx, fleet.Options{Store: s, Node: "node_bm", Logger: quietLogger(), NodeLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close(ctx)
	// Tiering would wait an hour or 64 rows: only the bookmarks tier.
	nl, err := nodelog.New(nodelog.Options{Store: s, Node: node.ID(), Generation: node.Generation(), Confirmer: node, Logger: quietLogger(), TierAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close(ctx, false)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	lg, err := ltxlog.New(ltxlog.Options{Store: s, NodeLog: nl, Clock: clk, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := cell.New(cell.Options{ScriptName: "cellb-example", Driver: wasm.New(), DataDir: t.TempDir(), Log: lg, Lease: node, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	app, err := counter.Register(rt, counter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	app.Routes(mux)
	hs := httptest.NewServer(mux)
	defer hs.Close()

	call := func(method, url string) string {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, body)
		}
		return string(body)
	}
	bookmark := func(query string) durability.Bookmark {
		t.Helper()
		var out struct{ Bookmark string }
		if err := json.Unmarshal([]byte(call("GET", hs.URL+"/counter/b/bookmark"+query)), &out); err != nil {
			t.Fatal(err)
		}
		b, err := durability.ParseBookmark(out.Bookmark)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	write := func(n int) {
		for range n {
			call("POST", hs.URL+"/counter/b")
		}
	}
	type named struct {
		what  string
		b     durability.Bookmark
		value string
	}
	var all []named
	write(5)
	all = append(all, named{"CurrentBookmark after 5", bookmark(""), "5"})
	write(3)
	all = append(all, named{"CurrentBookmark after 8", bookmark(""), "8"})
	clk.Advance(time.Minute)
	write(1)
	at9 := clk.Now()
	clk.Advance(time.Minute)
	write(2)
	// The state at 9 is a row in a bundle, and not the newest one.
	all = append(all, named{"BookmarkForTime of the 9th write", bookmark(fmt.Sprintf("?at=%d", at9.UnixMilli())), "9"})
	write(1)

	page, err := store.ListAll(ctx, s, store.ListOptions{Prefix: "cells/", Delimiter: "/"})
	if err != nil || len(page.Prefixes) != 1 {
		t.Fatalf("cells in the bucket: %v, %v", page.Prefixes, err)
	}
	key := strings.TrimSuffix(strings.TrimPrefix(page.Prefixes[0], "cells/"), "/")
	for _, n := range all {
		// The cell's prefix alone: no overlay of the node's bundles.
		res, err := ltxlog.Restore(ctx, s, key, ltxlog.RestoreOptions{Epoch: n.b.Epoch, TXID: ltx.TXID(n.b.TXID)})
		if err != nil {
			t.Fatalf("%s (%s): %v", n.what, n.b, err)
		}
		if got := counterValue(t, res.Image); got != n.value {
			t.Fatalf("%s (%s) restores the value %s, want %s", n.what, n.b, got, n.value)
		}
	}
}

// counterValue is the counter's value in a database image.
func counterValue(t *testing.T, image []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "restored.db")
	if err := os.WriteFile(path, image, 0o644); err != nil {
		t.Fatal(err)
	}
	conn, err := wasm.New().Open(context.Background(), driver.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(context.Background(), "SELECT v FROM _cf_KV WHERE k = 'value'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var vs []string
	for rows.Next() {
		vs = append(vs, fmt.Sprint(rows.Values()[0]))
	}
	if len(vs) != 1 {
		t.Fatalf("%d value rows", len(vs))
	}
	return vs[0]
}
