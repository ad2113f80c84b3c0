package ltx

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

func fi(level int, min, max TXID) FileInfo {
	return FileInfo{Level: level, MinTXID: min, MaxTXID: max}
}

func spans(plan []FileInfo) [][3]uint64 {
	var out [][3]uint64
	for _, f := range plan {
		out = append(out, [3]uint64{uint64(f.Level), uint64(f.MinTXID), uint64(f.MaxTXID)})
	}
	return out
}

func TestPlan(t *testing.T) {
	cases := []struct {
		name  string
		files []FileInfo
		want  [][3]uint64
		gap   bool
	}{
		{"l0 chain", []FileInfo{fi(0, 3, 3), fi(0, 1, 1), fi(0, 2, 2)}, [][3]uint64{{0, 1, 1}, {0, 2, 2}, {0, 3, 3}}, false},
		{"l1 covers l0", []FileInfo{fi(0, 1, 1), fi(0, 2, 2), fi(0, 3, 3), fi(1, 1, 3), fi(0, 4, 4)}, [][3]uint64{{1, 1, 3}, {0, 4, 4}}, false},
		{"overlap picks furthest", []FileInfo{fi(0, 1, 2), fi(0, 2, 5), fi(0, 3, 4), fi(0, 6, 6)}, [][3]uint64{{0, 1, 2}, {0, 2, 5}, {0, 6, 6}}, false},
		{"tie prefers higher level", []FileInfo{fi(0, 1, 4), fi(1, 1, 4)}, [][3]uint64{{1, 1, 4}}, false},
		{"tie prefers smaller min", []FileInfo{fi(0, 1, 1), fi(0, 2, 4), fi(1, 1, 4)}, [][3]uint64{{1, 1, 4}}, false},
		{"snapshot level starts the chain", []FileInfo{fi(9, 1, 10), fi(0, 11, 11), fi(0, 1, 1)}, [][3]uint64{{9, 1, 10}, {0, 11, 11}}, false},
		{"gap", []FileInfo{fi(0, 1, 1), fi(0, 2, 2), fi(0, 5, 5)}, nil, true},
		{"no start", []FileInfo{fi(0, 2, 2), fi(0, 3, 3)}, nil, true},
	}
	for _, c := range cases {
		got, err := Plan(c.files)
		if c.gap {
			var ge *GapError
			if !errors.As(err, &ge) {
				t.Errorf("%s: err = %v, want a gap", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if g := spans(got); !equalSpans(g, c.want) {
			t.Errorf("%s: plan %v, want %v", c.name, g, c.want)
		}
	}
	if _, err := Plan(nil); !errors.Is(err, ErrTxNotAvailable) {
		t.Errorf("empty: %v", err)
	}
}

func TestPlanTieBreaksOnModified(t *testing.T) {
	early := FileInfo{Key: "early", Level: 0, MinTXID: 1, MaxTXID: 2, Modified: time.Unix(10, 0)}
	late := FileInfo{Key: "late", Level: 0, MinTXID: 1, MaxTXID: 2, Modified: time.Unix(20, 0)}
	plan, err := Plan([]FileInfo{late, early})
	if err != nil || len(plan) != 1 || plan[0].Key != "early" {
		t.Fatalf("plan = %+v, %v", plan, err)
	}
}

func TestPlanTo(t *testing.T) {
	files := []FileInfo{fi(0, 1, 1), fi(0, 2, 2), fi(0, 3, 6), fi(0, 7, 7)}
	plan, err := PlanTo(files, 2)
	if err != nil || !equalSpans(spans(plan), [][3]uint64{{0, 1, 1}, {0, 2, 2}}) {
		t.Fatalf("to 2: %v %v", spans(plan), err)
	}
	_, err = PlanTo(files, 4)
	var te *TXIDNotRestorableError
	if !errors.As(err, &te) || te.Nearest != 2 {
		t.Fatalf("to 4: %v", err)
	}
	_, err = PlanTo(files, 99)
	if !errors.As(err, &te) || te.Nearest != 7 {
		t.Fatalf("to 99: %v", err)
	}
}

func TestPlanEpochs(t *testing.T) {
	e := func(epoch uint64, level int, min, max TXID) FileInfo {
		return FileInfo{Epoch: epoch, Level: level, MinTXID: min, MaxTXID: max}
	}
	// Format 1: every epoch opens with a snapshot; the newest wins alone.
	chain, err := PlanEpochs([]FileInfo{e(1, 0, 1, 1), e(1, 0, 2, 2), e(2, 0, 1, 1), e(2, 0, 2, 2), e(2, 0, 3, 3)})
	if err != nil || len(chain) != 3 || chain[0].Epoch != 2 {
		t.Fatalf("format 1: %+v %v", chain, err)
	}
	// Format 2: epoch 3 continues epoch 2 after a marker at 6; epoch 2 holds
	// a late file 6-6 from a fenced owner that must be dropped.
	chain, err = PlanEpochs([]FileInfo{
		e(2, 0, 1, 1), e(2, 1, 2, 5), e(2, 0, 6, 6),
		e(3, 0, 6, 6), e(3, 0, 7, 7),
	})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Plan(chain)
	if err != nil {
		t.Fatal(err)
	}
	var epochs []uint64
	for _, f := range plan {
		epochs = append(epochs, f.Epoch)
	}
	if !equalU64(epochs, []uint64{2, 2, 3, 3}) {
		t.Fatalf("plan epochs %v (%v)", epochs, spans(plan))
	}
	// An older epoch that does not end right below the cut is skipped.
	chain, err = PlanEpochs([]FileInfo{e(1, 0, 1, 1), e(1, 0, 2, 5), e(2, 0, 1, 3), e(3, 0, 4, 4)})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range chain {
		if f.Epoch == 1 {
			t.Fatalf("epoch 1 kept: %+v", chain)
		}
	}
	// Walk runs out of epochs.
	var ge *GapError
	if _, err := PlanEpochs([]FileInfo{e(4, 0, 10, 10)}); !errors.As(err, &ge) {
		t.Fatalf("want a gap, got %v", err)
	}
	if _, err := PlanEpochs(nil); !errors.Is(err, ErrTxNotAvailable) {
		t.Fatalf("empty: %v", err)
	}
}

// TestPlanProperties checks, over random file sets, that a plan is always a
// contiguous chain from TXID 1 that reaches the furthest TXID reachable.
func TestPlanProperties(t *testing.T) {
	for seed := uint64(0); seed < 2000; seed++ {
		checkPlanProperties(t, seed, randomFiles(rand.New(rand.NewPCG(seed, 7))))
	}
}

func randomFiles(r *rand.Rand) []FileInfo {
	n := r.IntN(12)
	var files []FileInfo
	for i := 0; i < n; i++ {
		min := TXID(1 + r.IntN(10))
		max := min + TXID(r.IntN(4))
		files = append(files, FileInfo{Level: r.IntN(3), MinTXID: min, MaxTXID: max, Modified: time.Unix(int64(r.IntN(5)), 0)})
	}
	return files
}

func checkPlanProperties(t *testing.T, seed uint64, files []FileInfo) {
	t.Helper()
	plan, err := Plan(files)
	if err != nil {
		var ge *GapError
		if !errors.Is(err, ErrTxNotAvailable) && !errors.As(err, &ge) {
			t.Fatalf("seed %d: untyped error %v", seed, err)
		}
		return
	}
	var cur TXID
	for _, f := range plan {
		if f.MinTXID > cur+1 || f.MaxTXID <= cur {
			t.Fatalf("seed %d: plan %v is not a contiguous chain", seed, spans(plan))
		}
		cur = f.MaxTXID
	}
	// Nothing reachable beyond cur was left out.
	reach := TXID(0)
	for changed := true; changed; {
		changed = false
		for _, f := range files {
			if f.MinTXID <= reach+1 && f.MaxTXID > reach {
				reach, changed = f.MaxTXID, true
			}
		}
	}
	if reach != cur {
		t.Fatalf("seed %d: plan reaches %d, files reach %d", seed, cur, reach)
	}
}

func equalSpans(a, b [][3]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
