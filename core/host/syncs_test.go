package host

import (
	"testing"

	"github.com/cellb/cellb/core/durability"
)

// TestSynchronousRules: NORMAL in WAL mode where a power loss can lose no
// acknowledged commit (a single host whose log acknowledges from the
// bucket, or a log that syncs the file per group commit), FULL where the
// local file alone keeps acknowledged commits, OFF in a fleet.
func TestSynchronousRules(t *testing.T) {
	acks := durability.Mode{AcksFromBucket: true}
	syncs := durability.Mode{SyncsLocal: true}
	for _, c := range []struct {
		name string
		o    Ownership
		mode durability.Mode
		jm   string
		want int64
	}{
		{"fleet", Fleet, acks, "wal", 0},
		{"single host, acks from the bucket", SingleHost, acks, "wal", 1},
		{"single host, acks from the bucket, rollback journal", SingleHost, acks, "delete", 2},
		{"no ownership, acks from the bucket", NoOwnership, acks, "wal", 2},
		{"no ownership, syncs per group", NoOwnership, syncs, "wal", 1},
		{"single host, no mode", SingleHost, durability.Mode{}, "wal", 2},
	} {
		if got := needSync(c.o, c.mode, c.jm); got != c.want {
			t.Errorf("%s: needSync = %d, want %d", c.name, got, c.want)
		}
	}
	err := judgeLocalSync(Config{Ownership: SingleHost, Mode: acks}, int64(0), "wal")
	if lde, ok := err.(*LocalDurabilityError); !ok || lde.Need != "NORMAL" {
		t.Fatalf("single host at OFF: %v, want a LocalDurabilityError needing NORMAL", err)
	}
}
