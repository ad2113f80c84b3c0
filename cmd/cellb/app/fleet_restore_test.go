package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	sf "github.com/superfly/ltx"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/drivers/wasm"
)

func cellIDFromName(script, name string) string {
	return cell.IDFromName(script, "Counter", name).String()
}

func restoreWithCellB(t *testing.T, bucketURL, key string) []byte {
	t.Helper()
	s, err := openBucket(context.Background(), bucketMux(), bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ltxlog.Restore(context.Background(), s, key, ltxlog.RestoreOptions{})
	if err != nil {
		t.Fatalf("restore %s: %v", key, err)
	}
	return res.Image
}

// restoreWithSuperflyAlone rebuilds a cell from the bucket's files on disk
// using only github.com/superfly/ltx's decoder: the newest epoch, its
// level-1 file from TXID 1 if any, then the contiguous level-0 files.
func restoreWithSuperflyAlone(t *testing.T, bucketDir, key string) []byte {
	t.Helper()
	root := filepath.Join(bucketDir, "cells", key, "ltx")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var newest uint64
	for _, e := range entries {
		if n, ok := ltx.ParseEpochDir(e.Name()); ok && n > newest {
			newest = n
		}
	}
	type file struct {
		path     string
		min, max uint64
	}
	var files []file
	for _, level := range []string{"0001", "0000"} {
		dir := filepath.Join(root, "e"+strconv.FormatUint(newest, 10), level)
		names, _ := os.ReadDir(dir)
		for _, n := range names {
			if !strings.HasSuffix(n.Name(), ".ltx") {
				continue
			}
			var f file
			f.path = filepath.Join(dir, n.Name())
			min, max, ok := ltx.ParseFilename(n.Name())
			if !ok {
				continue
			}
			f.min, f.max = uint64(min), uint64(max)
			files = append(files, f)
		}
	}
	sort.Slice(files, func(i, j int) bool {
		if files[i].min != files[j].min {
			return files[i].min < files[j].min
		}
		return files[i].max > files[j].max
	})
	var img []byte
	var cur uint64
	for _, f := range files {
		if f.max <= cur || f.min > cur+1 {
			continue
		}
		data, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		dec := sf.NewDecoder(bytes.NewReader(data))
		if err := dec.DecodeHeader(); err != nil {
			t.Fatal(err)
		}
		h := dec.Header()
		ps := int(h.PageSize)
		if need := int(h.Commit) * ps; len(img) < need {
			img = append(img, make([]byte, need-len(img))...)
		} else {
			img = img[:need]
		}
		buf := make([]byte, ps)
		for {
			var ph sf.PageHeader
			if err := dec.DecodePage(&ph, buf); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f.path, err)
			}
			copy(img[int(ph.Pgno-1)*ps:], buf)
		}
		if err := dec.Close(); err != nil {
			t.Fatalf("%s: superfly/ltx rejects it: %v", f.path, err)
		}
		cur = f.max
	}
	return img
}

// counterInImage reads the counter app's value out of a restored image.
func counterInImage(t *testing.T, img []byte) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := wasm.New().Open(ctx, driver.Config{Path: filepath.Join(t.TempDir(), "c.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Restore(ctx, img); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "SELECT v FROM _cf_KV WHERE k = 'value'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var v int64
	for rows.Next() {
		var s string
		if err := driver.ScanValues(rows.Values(), &s); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("counter value %q: %v", s, err)
		}
	}
	return v
}
