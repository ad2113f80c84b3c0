package fleet

import (
	"strings"
	"testing"
)

// TestSimulationReplays: a seed is a schedule. Running a seed twice gives
// the same trace, event for event, so -sim.seed=N replays what a failing
// run did. (Nothing in the node may run on a goroutine of its own, or
// consume the bucket's seeded faults in an order the seed does not fix.)
func TestSimulationReplays(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	for seed := uint64(0); seed < uint64(seeds); seed++ {
		first, second := traceOf(seed), traceOf(seed)
		if first != second {
			t.Fatalf("seed %d ran two different schedules:\n%s", seed, firstDifference(first, second))
		}
	}
}

// traceOf runs one seed of the simulation and returns its whole trace.
func traceOf(seed uint64) string {
	w := newWorld(seed, simVariant{})
	ft := &failRecorder{}
	w.t = ft
	func() {
		defer func() {
			if r := recover(); r != nil && r != errSimFailed {
				panic(r)
			}
		}()
		for _, n := range w.nodes {
			w.boot(n)
		}
		last := map[string]uint64{}
		for i := 0; i < 120; i++ {
			w.step(ft)
			w.checkWorld(ft, last)
		}
		w.settle(ft)
	}()
	return strings.Join(w.trace, "\n") + "\n" + ft.msg
}

func firstDifference(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < min(len(la), len(lb)); i++ {
		if la[i] != lb[i] {
			return "  first run:  " + la[i] + "\n  second run: " + lb[i]
		}
	}
	return "  one trace is longer than the other"
}
