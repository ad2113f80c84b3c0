package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

func TestWithPrefixKeepsKeysApart(t *testing.T) {
	ctx := t.Context()
	base := memstore.New()
	a, err := store.WithPrefix(base, "team/a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.WithPrefix(base, "team/b/")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"x", "dir/y", "dir/z"} {
		if _, err := a.Put(ctx, k, []byte("a:"+k), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Put(ctx, "x", []byte("b:x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}

	o, err := a.Get(ctx, "x")
	if err != nil || o.Key != "x" || string(o.Data) != "a:x" {
		t.Fatalf("a.Get(x) = %+v, %v", o, err)
	}
	if raw, err := base.Get(ctx, "team/a/dir/y"); err != nil || string(raw.Data) != "a:dir/y" {
		t.Fatalf("the prefixed key is not where it should be: %v", err)
	}
	page, err := a.List(ctx, store.ListOptions{Delimiter: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(keys(page), page.Prefixes); got != "[x] [dir/]" {
		t.Fatalf("a.List = %s", got)
	}
	page, err = a.List(ctx, store.ListOptions{Prefix: "dir/", Limit: 1})
	if err != nil || len(page.Objects) != 1 || page.Objects[0].Key != "dir/y" || page.NextToken == "" {
		t.Fatalf("first page under dir/: %+v, %v", page, err)
	}
	page, err = a.List(ctx, store.ListOptions{Prefix: "dir/", Limit: 1, Token: page.NextToken})
	if err != nil || len(page.Objects) != 1 || page.Objects[0].Key != "dir/z" {
		t.Fatalf("second page under dir/: %+v, %v", page, err)
	}
	if err := b.Delete(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, "x"); err != nil {
		t.Fatalf("deleting b's x removed a's: %v", err)
	}
	if err := store.Close(a); err != nil {
		t.Fatal(err)
	}
}

func TestWithPrefixRejectsEscapes(t *testing.T) {
	ctx := t.Context()
	base := memstore.New()
	p, err := store.WithPrefix(base, "p")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"../q", "", "/abs", "a//b"} {
		if _, err := p.Put(ctx, k, nil, store.PutOptions{}); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", k, err)
		}
		if _, err := p.Get(ctx, k); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Get(%q) = %v, want ErrInvalidKey", k, err)
		}
		if err := p.Delete(ctx, k); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	if _, err := p.List(ctx, store.ListOptions{Prefix: "../"}); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("List(../) = %v", err)
	}
	// A relative key that is valid alone but too long under the prefix.
	long := strings.Repeat("k", store.MaxKeyLen-1)
	if _, err := p.Put(ctx, long, nil, store.PutOptions{}); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Put of a key too long under the prefix: %v", err)
	}
	if base.Len() != 0 {
		t.Fatal("an invalid key reached the inner store")
	}
	for _, bad := range []string{"/p", "a//b", "..", "a\\b"} {
		if _, err := store.WithPrefix(base, bad); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("WithPrefix(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
	if s, err := store.WithPrefix(base, ""); err != nil || s != store.Store(base) {
		t.Errorf("an empty prefix should return the store itself")
	}
}

func keys(p store.ListPage) []string {
	var out []string
	for _, o := range p.Objects {
		out = append(out, o.Key)
	}
	return out
}
