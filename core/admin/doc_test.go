package admin

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/store/memstore"
)

// TestJSONFieldsAreDocumented: every JSON field of inspect's output is
// named in docs/cli.md, so the documented list stays the real one.
func TestJSONFieldsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("%s.%s: JSON field %q is not in docs/cli.md", ty.Name(), f.Name, name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Report{}))
	if len(seen) < 6 {
		t.Errorf("walked %d types", len(seen))
	}
}

// TestInspectFollowsTheStoresOwnPages: more cells than the store's largest
// page (1000) with the default page size.
func TestInspectFollowsTheStoresOwnPages(t *testing.T) {
	s := memstore.New()
	const n = 1500
	for i := 0; i < n; i++ {
		putOwn(t, s, fmt.Sprintf("Counter:c%04d", i), "", 1)
	}
	r, err := Inspect(context.Background(), s, opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cells) != n || r.Cells[n-1].Key != fmt.Sprintf("Counter:c%04d", n-1) || r.Cells[n-1].Record != RecordReleased {
		t.Fatalf("%d cells", len(r.Cells))
	}
}
