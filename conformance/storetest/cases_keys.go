package storetest

import (
	"errors"
	"strings"

	"github.com/cellb/cellb/core/store"
)

func testInvalidKeys(t tb, e *env) {
	ctx := e.ctx
	bad := []string{
		"",
		"/absolute",
		e.key("double//slash"),
		e.key("dot/./segment"),
		e.key("dotdot/../segment"),
		e.key(".."),
		e.key("trailing/"),
		e.key(`back\slash`),
		e.key("nul\x00byte"),
		e.key("bad-utf8-\xff\xfe"),
		e.key(strings.Repeat("k", store.MaxKeyLen+1)),
	}
	for _, k := range bad {
		short := k
		if len(short) > 80 {
			short = short[:80] + "..."
		}
		if _, err := e.s.Put(ctx, k, e.body("bad"), store.PutOptions{}); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("put %q: %v, want ErrInvalidKey", short, err)
		}
		if _, err := e.s.Put(ctx, k, e.body("bad"), store.PutOptions{Condition: store.IfAbsent}); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("create-only put %q: %v, want ErrInvalidKey", short, err)
		}
		if _, err := e.s.Get(ctx, k); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("get %q: %v, want ErrInvalidKey", short, err)
		}
		if err := e.s.Delete(ctx, k); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("delete %q: %v, want ErrInvalidKey", short, err)
		}
	}
	for _, p := range []string{"/", "/absolute", e.key("a//"), e.key("../"), e.key("x\x00")} {
		if _, err := e.s.List(ctx, store.ListOptions{Prefix: p}); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("list prefix %q: %v, want ErrInvalidKey", p, err)
		}
	}
	if left := listKeys(t, ctx, e.s, e.prefix); len(left) > 0 {
		t.Errorf("rejected writes left objects behind: %q", left)
	}
}
