package wake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
	"github.com/cellb/cellb/core/wakeport"
)

// TestPublicationsUnderFaults publishes a cell's alarm changes through a
// bucket that fails, drops and loses the answers of calls, while ownership
// moves from node to node and the waker cleans up. Whatever happens, the
// index never loses an acknowledged alarm: the entry of every publication
// whose reply was released is in the bucket until a newer installation is
// retired, and the retirement certificate never moves backwards.
func TestPublicationsUnderFaults(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { publicationsUnderFaults(t, seed) })
	}
}

type acked struct {
	id  Identity
	key string // "" when the publication deleted the alarm
}

func publicationsUnderFaults(t *testing.T, seed uint64) {
	ctx := context.Background()
	inner := memstore.New()
	faulty := faultstore.New(inner, faultstore.Config{Seed: seed, All: faultstore.Faults{Fail: 0.1, Drop: 0.05, LoseResponse: 0.05}})
	r := rand.New(rand.NewPCG(seed, 7))
	var acks []acked
	var highest Identity
	checkRetired := func(when string) *Retired {
		obj, err := inner.Get(ctx, layout.WakeRetiredKey(cellA))
		if store.IsNotFound(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		ret, err := DecodeRetired(layout.WakeRetiredKey(cellA), obj.Data)
		if err != nil {
			t.Fatalf("%s: unreadable certificate: %v", when, err)
		}
		if ret.Identity.Compare(highest) < 0 {
			t.Fatalf("%s: the certificate moved back from %s to %s", when, highest, ret.Identity)
		}
		highest = ret.Identity
		return &ret
	}
	checkEntries := func(when string) {
		ret := checkRetired(when)
		for _, a := range acks {
			if a.key == "" {
				continue
			}
			if _, err := inner.Get(ctx, a.key); store.IsNotFound(err) && (ret == nil || !Obsolete(a.id, *ret)) {
				t.Fatalf("%s: the entry of acknowledged installation %s is gone, but the certificate (%+v) does not cover it", when, a.id, ret)
			}
		}
	}
	now := t0
	for epoch := uint64(1); epoch <= 5; epoch++ {
		node := fmt.Sprintf("n%d", epoch%3)
		if _, err := inner.Put(ctx, layout.OwnKey(cellA), layout.OwnRecord{Node: node, Epoch: epoch}.Encode(), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		svc, err := New(Options{Store: faulty, Node: node, Clock: clock.NewReal(), Retries: 2, RetryDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for seq := uint64(1); seq <= uint64(1+r.IntN(6)); seq++ {
			p := wakeport.Publication{Cell: cellA, Epoch: epoch, Seq: seq}
			if r.IntN(4) != 0 {
				now = now.Add(time.Duration(r.IntN(180)) * time.Second)
				p.AtMs = atMs(now)
			}
			commit := durability.Resolved(nil)
			if r.IntN(10) == 0 {
				commit = durability.Resolved(fmt.Errorf("upload failed"))
			}
			if err := wait(t, svc.Publish(p, commit)); err == nil {
				a := acked{id: Identity{epoch, seq}}
				if p.AtMs != nil {
					a.key = EntryKey(cellA, *p.AtMs, a.id)
				}
				acks = append(acks, a)
			}
			if r.IntN(3) == 0 {
				// The waker's cleanup runs concurrently with publications.
				svc.cleanup(ctx)
			}
		}
		settle(t, svc)
		checkEntries(fmt.Sprintf("after epoch %d", epoch))
	}
	waker, _ := New(Options{Store: inner, Node: "w", Clock: clock.NewReal()})
	if err := waker.cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	checkEntries("after a clean cleanup")
}
