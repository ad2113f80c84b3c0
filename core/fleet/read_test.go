package fleet

import (
	"context"
	"errors"
	"testing"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

func TestReadOwnAndNodeLease(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	if own, v, err := ReadOwn(ctx, s, "C:a"); own != nil || v != "" || err != nil {
		t.Fatalf("absent record: %v %q %v", own, v, err)
	}
	if l, v, err := ReadNodeLease(ctx, s, "node_a"); l != nil || v != "" || err != nil {
		t.Fatalf("absent lease: %v %q %v", l, v, err)
	}
	ov, err := s.Put(ctx, layout.OwnKey("C:a"), layout.OwnRecord{Node: "node_a", Epoch: 3}.Encode(), store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lv, err := s.Put(ctx, layout.NodeKey("node_a"), layout.NodeLease{Node: "node_a", ExpiresMs: 9}.Encode(), store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if own, v, err := ReadOwn(ctx, s, "C:a"); err != nil || own == nil || *own != (layout.OwnRecord{Node: "node_a", Epoch: 3}) || v != ov {
		t.Fatalf("record: %v %q %v, want node_a epoch 3 at %q", own, v, err, ov)
	}
	if l, v, err := ReadNodeLease(ctx, s, "node_a"); err != nil || l == nil || l.Node != "node_a" || l.ExpiresMs != 9 || v != lv {
		t.Fatalf("lease: %+v %q %v, want node_a expiring at 9, version %q", l, v, err, lv)
	}
	for _, key := range []string{layout.OwnKey("C:b"), layout.NodeKey("node_b")} {
		if _, err := s.Put(ctx, key, []byte(`{"node":"x"}`), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err1 := ReadOwn(ctx, s, "C:b")
	_, _, err2 := ReadNodeLease(ctx, s, "node_b")
	for i, err := range []error{err1, err2} {
		var re *layout.RecordError
		want := []string{layout.OwnKey("C:b"), layout.NodeKey("node_b")}[i]
		if !errors.As(err, &re) || re.Key != want || !errors.Is(err, layout.ErrMalformedRecord) {
			t.Errorf("malformed %s: err = %v", want, err)
		}
	}
}
