package shard

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/cellb/cellb/core/lease"
)

// A grant's epoch is written (and synced) only when its holder first
// writes (RecordEpoch): grants that only read leave the shard file as it
// was, a recorded epoch covers every epoch granted before it, lands in the
// slot the previous recorded epoch does not occupy, and a takeover by
// another Lease continues above it.
func TestEpochIsRecordedWithTheFirstWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := open(t, dir, 1)
	file := func() []byte {
		b, err := os.ReadFile(lockPath(dir, 0))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	start := file()
	var gs []lease.Grant
	for _, c := range []string{"C:a", "C:b", "C:c"} {
		gs = append(gs, readGrant(t, a, c))
	}
	if !bytes.Equal(file(), start) {
		t.Fatalf("grants that stored nothing wrote the shard file: %x -> %x", start, file())
	}
	for i, g := range gs {
		if g.Epoch() != uint64(i+1) {
			t.Fatalf("grant %d has epoch %d, want %d", i, g.Epoch(), i+1)
		}
	}
	// The first grant writes: the file records epoch 3 or above (every
	// epoch handed out), in a slot of its own.
	if err := gs[0].(lease.EpochRecorder).RecordEpoch(ctx); err != nil {
		t.Fatal(err)
	}
	e, err := decodeEpoch(file())
	if err != nil || e < 3 {
		t.Fatalf("after RecordEpoch the file says %d (%v), want at least 3", e, err)
	}
	after := file()
	if err := gs[2].(lease.EpochRecorder).RecordEpoch(ctx); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file(), after) {
		t.Fatal("recording an epoch already covered wrote the file again")
	}
	// A later grant records above, in the other slot: tearing that slot
	// leaves the earlier record readable.
	g4 := readGrant(t, a, "C:d")
	readGrant(t, a, "C:f") // two epochs past the record: its slot's parity
	if g4.Epoch() <= e {
		t.Fatalf("a later grant got epoch %d, not above the recorded %d", g4.Epoch(), e)
	}
	if err := g4.(lease.EpochRecorder).RecordEpoch(ctx); err != nil {
		t.Fatal(err)
	}
	e2, _ := decodeEpoch(file())
	if e2 < g4.Epoch() || e2%2 == e%2 {
		t.Fatalf("second record %d after %d: want at least %d, in the other slot", e2, e, g4.Epoch())
	}
	torn := file()
	copy(torn[(e2%2)*slotSize:], bytes.Repeat([]byte{0xff}, slotSize))
	if got, err := decodeEpoch(torn); err != nil || got != e {
		t.Fatalf("with the newest slot torn the file reads %d (%v), want %d", got, err, e)
	}
	// A superseded grant may not record.
	old := readGrant(t, a, "C:e")
	readGrant(t, a, "C:e")
	var lapsed *lease.LeaseLapsedError
	if err := old.(lease.EpochRecorder).RecordEpoch(ctx); !errors.As(err, &lapsed) {
		t.Fatalf("RecordEpoch of a superseded grant: %v, want *lease.LeaseLapsedError", err)
	}
	a.Close()
	// Another Lease takes over above what was recorded.
	b := open(t, dir, 1)
	if g := readGrant(t, b, "C:a"); g.Epoch() <= e2 {
		t.Fatalf("takeover granted epoch %d, not above the recorded %d", g.Epoch(), e2)
	}
}

// readGrant takes a cell without recording its epoch (a holder that only
// reads).
func readGrant(t *testing.T, l *Lease, cell string) lease.Grant {
	t.Helper()
	g, err := l.TryAcquire(context.Background(), cell)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
