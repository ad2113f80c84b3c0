package leasetest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// fleetHarness runs the fleet protocol on an in-memory bucket in real time
// with a short TTL.
type fleetHarness struct {
	fs  *faultstore.Store
	ttl time.Duration
	seq atomic.Int64
}

func newFleetHarness() *fleetHarness {
	return &fleetHarness{fs: faultstore.New(memstore.New(), faultstore.Config{}), ttl: time.Second}
}

func (h *fleetHarness) NewNode(ctx context.Context) (Node, error) {
	name := fmt.Sprintf("node_t%d", h.seq.Add(1))
	n, err := fleet.Join(ctx, fleet.Options{Store: h.fs, Node: name, TTL: h.ttl, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	return &fleetNode{Node: n, h: h}, nil
}

// WriteLogEpoch leaves the TXID-1 file of epoch in the cell's LTX log.
func (h *fleetHarness) WriteLogEpoch(ctx context.Context, cell string, epoch uint64) error {
	_, err := h.fs.Put(ctx, ltx.Key(cell, epoch, 0, 1, 1), []byte("another writer's snapshot"), store.PutOptions{})
	return err
}

func (h *fleetHarness) Advance(d time.Duration) { time.Sleep(d) }
func (h *fleetHarness) TTL() time.Duration      { return h.ttl }
func (h *fleetHarness) Close() error            { return nil }

type fleetNode struct {
	*fleet.Node
	h *fleetHarness
}

func (n *fleetNode) Crash() { n.Kill() }

func (n *fleetNode) Isolate(cut bool) error {
	if cut {
		n.h.fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: fleet.NodeKey(n.ID()), Fault: faultstore.Fail, Times: -1})
	} else {
		n.h.fs.ClearScript()
	}
	return nil
}

func TestFleetLeasePasses(t *testing.T) {
	t.Parallel()
	Run(t, newFleetHarness())
}

// TestSuiteRejectsBrokenLeases: each twin must fail, and in the cases that
// are about the promise it breaks.
func TestSuiteRejectsBrokenLeases(t *testing.T) {
	twins := []struct {
		name string
		wrap func(Harness) Harness
		must []string
	}{
		{"unexclusive", Unexclusive, []string{"Exclusive", "OneWinnerUnderContention"}},
		{"static epoch", StaticEpoch, []string{"EpochsGrow", "ReleaseHandsOver"}},
		{"never fences", NeverFences, []string{"SelfFence", "ReleaseHandsOver"}},
		{"forgetful release", ForgetfulRelease, []string{"ReleaseHandsOver", "CloseReleasesEverything"}},
		{"crash keeps claims", CrashKeepsClaims, []string{"CrashTakeover"}},
		{"refusing grants", RefusingGrants, []string{"AcquireGrants"}},
		{"log-blind epochs", LogBlindEpochs, []string{"EpochsPassTheLog"}},
	}
	for _, tw := range twins {
		t.Run(tw.name, func(t *testing.T) {
			t.Parallel()
			h := tw.wrap(newFleetHarness())
			defer h.Close()
			rep := RunReport(context.Background(), h)
			failed := rep.Failed()
			for _, c := range tw.must {
				if !slices.Contains(failed, c) {
					t.Errorf("twin %q passed case %s (failed: %v)", tw.name, c, failed)
				}
			}
		})
	}
}
