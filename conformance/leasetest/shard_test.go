package leasetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/shard"
)

// shardHarness runs single-host shard locks: every node is its own
// shard.Lease on one directory. flock(2) locks belong to open files, so two
// Leases in this process exclude each other as two processes would.
type shardHarness struct {
	dir string
	n   int
}

func (h *shardHarness) NewNode(ctx context.Context) (Node, error) {
	l, err := shard.Open(h.dir, h.n)
	if err != nil {
		return nil, err
	}
	return &shardNode{Lease: l}, nil
}

// Advance only waits: nothing about a lock depends on time.
func (h *shardHarness) Advance(d time.Duration) { time.Sleep(d) }

// TTL is 0: the kernel drops a dead process's locks at once.
func (h *shardHarness) TTL() time.Duration { return 0 }
func (h *shardHarness) Close() error       { return nil }

type shardNode struct {
	*shard.Lease
}

func (n *shardNode) Close(ctx context.Context) error { return n.Lease.Close() }

// Crash closes the lock files, which is all a process's death does to its
// flock locks; the crashed participant's own grants no longer matter.
func (n *shardNode) Crash() { n.Lease.Close() }

// Isolate: there is nothing to be cut off from; a lock cannot lapse.
func (n *shardNode) Isolate(cut bool) error { return ErrUnsupported }

// Pause: a paused process keeps its locks; nothing can lapse.
func (n *shardNode) Pause(on bool) error { return ErrUnsupported }

func TestShardLeasePasses(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3, 16} {
		t.Run(fmt.Sprintf("shards=%d", n), func(t *testing.T) {
			Run(t, &shardHarness{dir: t.TempDir(), n: n})
		})
	}
}

// shardTwins are Twins as the shard harness can show them, including the
// immediate-takeover check that only TTL 0 enables.
func shardTwins() []suite.Twin[Harness] {
	must := map[string][]string{
		"unexclusive":  {"Exclusive", "OneWinnerUnderContention"},
		"static-epoch": {"EpochsGrow", "ReleaseHandsOver", "CrashTakeover"},
		// No isolation on one host: the fence is seen after Release.
		"never-fences": {"ReleaseHandsOver"},
		// Crash and Close drop the locks alike here, so only Release shows it.
		"forgetful-release":  {"ReleaseHandsOver"},
		"crash-keeps-claims": {"CrashTakeover"},
		"refusing-grants":    {"AcquireGrants"},
	}
	var out []suite.Twin[Harness]
	for _, tw := range Twins() {
		if m, ok := must[tw.Name]; ok {
			tw.CaughtBy = m
			out = append(out, tw)
		}
	}
	return out
}

// TestSuiteRejectsBrokenShardLeases: the twins fail on the shard harness
// too.
func TestSuiteRejectsBrokenShardLeases(t *testing.T) {
	t.Parallel()
	twins := shardTwins()
	if len(twins) != 6 {
		t.Fatalf("%d shard twins, want 6", len(twins))
	}
	suite.RunTwins(t, Harness(&shardHarness{dir: t.TempDir(), n: 4}), twins, RunReport)
}
