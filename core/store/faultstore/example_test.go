package faultstore_test

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// A lease install whose response is lost: the caller sees an ambiguous
// error and must re-read to learn that its write applied.
func Example() {
	ctx := context.Background()
	bucket := faultstore.New(memstore.New(), faultstore.Config{Seed: 1})
	bucket.LoseNext(faultstore.OpPut, "nodes/a.json")

	_, err := bucket.Put(ctx, "nodes/a.json", []byte(`{"node":"a"}`), store.PutOptions{Condition: store.IfAbsent})
	fmt.Println("ambiguous:", store.IsAmbiguous(err))

	o, err := bucket.Get(ctx, "nodes/a.json")
	if err != nil {
		panic(err)
	}
	fmt.Println("bucket holds:", string(o.Data))

	st := bucket.Stats()
	fmt.Println("puts:", st.Put.Calls, "lost responses:", st.Put.Lost, "gets:", st.Get.Calls)
	// Output:
	// ambiguous: true
	// bucket holds: {"node":"a"}
	// puts: 1 lost responses: 1 gets: 1
}

// Random faults are repeatable: the same seed and call order give the same
// failures.
func Example_seeded() {
	ctx := context.Background()
	for range 2 {
		bucket := faultstore.New(memstore.New(), faultstore.Config{
			Seed: 7,
			All:  faultstore.Faults{Fail: 0.5},
		})
		for i := range 12 {
			_, err := bucket.Put(ctx, fmt.Sprint("k", i), nil, store.PutOptions{})
			if err != nil {
				fmt.Print("x")
			} else {
				fmt.Print(".")
			}
		}
		fmt.Println()
	}
	// Output:
	// xxxx....x.x.
	// xxxx....x.x.
}
