package celltest

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/kvvalue"
)

func kvCases() []caseDef {
	return []caseDef{
		{"kv/basic", caseKVBasic},
		{"kv/list", caseKVList},
		{"kv/v8-values", caseKVV8},
	}
}

func caseKVBasic(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "KV", nil)
	s := pc.stub("a")
	type rec struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}
	must(c, s, "kv", func(ctx context.Context, p *probe) (int, error) {
		kv := p.st.KV()
		if _, found, err := kv.Get(ctx, "missing"); found || err != nil {
			c.errorf("Get(missing) = found %v, err %v", found, err)
		}
		if err := kv.Put(ctx, "r", rec{"x", []string{"a", "b"}}); err != nil {
			return 0, err
		}
		var got rec
		if found, err := kv.GetInto(ctx, "r", &got); !found || err != nil || got.Name != "x" || len(got.Tags) != 2 {
			c.errorf("GetInto(r) = %+v, %v, %v", got, found, err)
		}
		if err := kv.PutMany(ctx, map[string]any{"a": 1, "b": "two", "c": nil}); err != nil {
			return 0, err
		}
		m, err := kv.GetMany(ctx, []string{"a", "b", "c", "zz"})
		if err != nil {
			return 0, err
		}
		if len(m) != 3 {
			c.errorf("GetMany returned %d entries, want 3", len(m))
		}
		if v, _ := m["b"].Any(); v != "two" {
			c.errorf("GetMany b = %v, want two", v)
		}
		if ok, err := kv.Delete(ctx, "a"); !ok || err != nil {
			c.errorf("Delete(a) = %v, %v; want true", ok, err)
		}
		if ok, err := kv.Delete(ctx, "a"); ok || err != nil {
			c.errorf("second Delete(a) = %v, %v; want false", ok, err)
		}
		if n, err := kv.DeleteMany(ctx, []string{"b", "c", "zz"}); n != 2 || err != nil {
			c.errorf("DeleteMany = %d, %v; want 2", n, err)
		}
		var ke *cell.KeyError
		if err := kv.Put(ctx, strings.Repeat("k", cell.MaxKVKeyBytes+1), 1); !errors.As(err, &ke) {
			c.errorf("Put with an oversized key: %v, want a *cell.KeyError", err)
		}
		if err := kv.Put(ctx, "bad", func() {}); err == nil {
			c.errorf("Put of a value JSON cannot encode succeeded")
		}
		if err := kv.DeleteAll(ctx); err != nil {
			return 0, err
		}
		if es, err := kv.List(ctx, cell.ListOptions{}); len(es) != 0 || err != nil {
			c.errorf("after DeleteAll, List = %d entries, %v", len(es), err)
		}
		return 0, nil
	})
}

func caseKVList(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "List", nil)
	s := pc.stub("a")
	keys := []string{"", "a", "a/1", "a/2", "a/20", "a/3", "ab", "b", "b/1", "é", "é/x", "\xff", "\xff\xff", "\xff\xffz", "z"}
	opts := []cell.ListOptions{
		{},
		{Reverse: true},
		{Limit: 3},
		{Reverse: true, Limit: 2},
		{Prefix: "a/"},
		{Prefix: "a/", Reverse: true, Limit: 2},
		{Prefix: "é"},
		{Prefix: "\xff\xff"},
		{Start: "a/2", End: "b"},
		{StartAfter: "a/2", End: "b/1"},
		{Start: "b", Reverse: true},
		{End: "a/2"},
		{Start: "a", Prefix: "a/2"},
		{Start: "zz"},
	}
	must(c, s, "list", func(ctx context.Context, p *probe) (int, error) {
		kv := p.st.KV()
		for i, k := range keys {
			if err := kv.Put(ctx, k, i); err != nil {
				return 0, err
			}
		}
		// Another cell's keys in the same table must not show.
		for _, o := range opts {
			es, err := kv.List(ctx, o)
			if err != nil {
				c.errorf("List(%+v): %v", o, err)
				continue
			}
			var got []string
			for _, e := range es {
				got = append(got, e.Key)
				var idx int
				if err := e.Value.Decode(&idx); err != nil || keys[idx] != e.Key {
					c.errorf("List(%+v): entry %q holds %d (%v)", o, e.Key, idx, err)
				}
			}
			if want := listModel(keys, o); !slices.Equal(got, want) {
				c.errorf("List(%+v) = %q, want %q", o, got, want)
			}
		}
		return 0, nil
	})
}

// listModel is the reference semantics of List.
func listModel(keys []string, o cell.ListOptions) []string {
	var out []string
	for _, k := range keys {
		if o.Start != "" && k < o.Start || o.StartAfter != "" && k <= o.StartAfter ||
			o.End != "" && k >= o.End || !strings.HasPrefix(k, o.Prefix) {
			continue
		}
		out = append(out, k)
	}
	slices.Sort(out)
	if o.Reverse {
		slices.Reverse(out)
	}
	if o.Limit > 0 && len(out) > o.Limit {
		out = out[:o.Limit]
	}
	return out
}

// v8Vectors were produced by V8's own serializer (version 15, the format
// workerd stores), as JavaScript values are written by celld.
var v8Vectors = []struct {
	hex  string
	want any
}{
	// {a: 1, b: "x", c: [true, null]}
	{"ff0f6f2201614902220162220178220163410254302400027b03", map[string]any{"a": 1.0, "b": "x", "c": []any{true, nil}}},
	// 12345678901234567890n
	{"ff0f5a10d20a1feb8ca954ab", mustBig("12345678901234567890")},
	// "héllo"
	{"ff0f220568e96c6c6f", "héllo"},
}

func mustBig(s string) *big.Int {
	n, _ := new(big.Int).SetString(s, 10)
	return n
}

// Values celld wrote in V8's format read back; unsupported ones fail with
// a typed error naming the tag.
func caseKVV8(c *checkT) {
	dir := filepath.Join(c.dir, "v8")
	rt0 := c.runtime(rtConfig{dir: dir})
	pc0 := c.probeClass(rt0, "V8", nil)
	s0 := pc0.stub("a")
	must(c, s0, "create the cell", func(ctx context.Context, p *probe) (int, error) { return 0, p.st.KV().Put(ctx, "json", "text") })
	if err := rt0.Close(c.ctx); err != nil {
		c.fatalf("Close: %v", err)
	}
	path, _ := cell.DatabasePath(dir, s0.Key())
	if _, err := os.Stat(path); err != nil {
		c.fatalf("database file: %v", err)
	}
	conn, err := c.h.Driver.Open(c.ctx, driver.Config{Path: path})
	if err != nil {
		c.fatalf("open: %v", err)
	}
	for i, v := range v8Vectors {
		b, _ := hex.DecodeString(v.hex)
		if _, err := conn.Exec(c.ctx, "INSERT INTO _cf_KV(scope, k, v) VALUES(?, ?, ?)", s0.Key(), fmt.Sprintf("v8-%d", i), b); err != nil {
			c.fatalf("insert V8 value: %v", err)
		}
	}
	mapBytes, _ := hex.DecodeString("ff0f3b220161490222016249043a04") // new Map([["a",1],["b",2]])
	conn.Exec(c.ctx, "INSERT INTO _cf_KV(scope, k, v) VALUES(?, 'map', ?)", s0.Key(), mapBytes)
	conn.Close()

	rt := c.runtime(rtConfig{dir: dir})
	pc := c.probeClass(rt, "V8", nil)
	must(c, pc.stub("a"), "read V8 values", func(ctx context.Context, p *probe) (int, error) {
		kv := p.st.KV()
		for i, v := range v8Vectors {
			val, found, err := kv.Get(ctx, fmt.Sprintf("v8-%d", i))
			if err != nil || !found {
				c.errorf("Get(v8-%d): found %v, %v", i, found, err)
				continue
			}
			if val.Format() != kvvalue.FormatV8 {
				c.errorf("v8-%d reads as format %v, want v8", i, val.Format())
			}
			got, err := val.Any()
			if err != nil || !reflect.DeepEqual(got, v.want) {
				c.errorf("v8-%d decodes to %#v (%v), want %#v", i, got, err, v.want)
			}
		}
		val, _, err := kv.Get(ctx, "map")
		if err != nil {
			return 0, err
		}
		_, err = val.Any()
		var ut *kvvalue.UnsupportedV8TagError
		if !errors.As(err, &ut) || !strings.Contains(err.Error(), "Map") {
			c.errorf("decoding a Map returned %v, want an *UnsupportedV8TagError naming Map", err)
		}
		// Copying a V8 value keeps its bytes.
		v0, _, _ := kv.Get(ctx, "v8-0")
		if err := kv.Put(ctx, "copy", v0); err != nil {
			return 0, err
		}
		cp, _, _ := kv.Get(ctx, "copy")
		if cp.Format() != kvvalue.FormatV8 || string(cp.Raw()) != string(v0.Raw()) {
			c.errorf("a copied V8 value changed: %x vs %x", cp.Raw(), v0.Raw())
		}
		return 0, nil
	})
}
