package durability

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestCollisionByTail: a first object the log streamed (it kept only the
// size and the trailer) is its own when the existing one has that size and
// ends with that trailer; any other is another writer's.
func TestCollisionByTail(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	body := append(bytes.Repeat([]byte{7}, 100), []byte("0123456789abcdef")...)
	if _, err := s.Put(ctx, "k", body, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	tail := body[len(body)-16:]
	obj := FirstObject{Cell: "c", Epoch: 3, Key: "k", Size: int64(len(body)), Tail: tail}
	if err := Collision(ctx, s, obj, nil); err != nil {
		t.Fatalf("own object: %v", err)
	}
	for name, o := range map[string]FirstObject{
		"other tail":  {Cell: "c", Epoch: 3, Key: "k", Size: int64(len(body)), Tail: []byte("0123456789abcdeX")},
		"other size":  {Cell: "c", Epoch: 3, Key: "k", Size: int64(len(body)) + 1, Tail: tail},
		"larger size": {Cell: "c", Epoch: 3, Key: "k", Size: int64(len(body)) + 1000, Tail: tail},
		"shorter":     {Cell: "c", Epoch: 3, Key: "k", Size: 10, Tail: tail},
	} {
		var ee *EpochInUseError
		if err := Collision(ctx, s, o, nil); !errors.As(err, &ee) || ee.Epoch != 3 {
			t.Errorf("%s: %v, want *EpochInUseError", name, err)
		}
	}
	if err := Collision(ctx, s, FirstObject{Key: "missing", Size: 5, Tail: tail}, nil); !store.IsNotFound(err) {
		t.Errorf("a vanished object: %v", err)
	}
}
