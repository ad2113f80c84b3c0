package ltx

import (
	"errors"
	"math/rand/v2"
	"strings"
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
	marker := func(epoch uint64, txid TXID) FileInfo {
		return FileInfo{Epoch: epoch, Level: 0, MinTXID: txid, MaxTXID: txid, Size: MarkerSize}
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
		marker(3, 6), e(3, 0, 7, 7),
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
	chain, err = PlanEpochs([]FileInfo{e(1, 0, 1, 1), e(1, 0, 2, 5), e(2, 0, 1, 3), marker(3, 4)})
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
	if _, err := PlanEpochs([]FileInfo{marker(4, 10)}); !errors.As(err, &ge) {
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

func cellFile(epoch uint64, level int, min, max TXID, size int64) FileInfo {
	return FileInfo{Key: Key("C:x", epoch, level, min, max), Cell: "C:x", Epoch: epoch, Level: level, MinTXID: min, MaxTXID: max, Size: size}
}

// TestPlanEpochsRefusesAStitch: when the newest epoch's snapshot is gone,
// its deltas must not be laid over an older epoch's files, which would
// pass every check and still be a state nobody wrote.
func TestPlanEpochsRefusesAStitch(t *testing.T) {
	cases := []struct {
		name    string
		files   []FileInfo
		missing string
		first   string
		older   uint64
	}{
		{"newest epoch's snapshot gone, older epoch ends at 1", []FileInfo{
			cellFile(1, 0, 1, 1, 900), cellFile(1, 0, 2, 2, 400),
			cellFile(2, 0, 2, 2, 400), cellFile(2, 0, 3, 3, 400),
		}, Key("C:x", 2, 0, 1, 1), Key("C:x", 2, 0, 2, 2), 1},
		{"snapshot that merged TXIDs 1-3 gone", []FileInfo{
			cellFile(1, 0, 1, 3, 900),
			cellFile(4, 0, 4, 4, 400), cellFile(4, 0, 5, 6, 400),
		}, Key("C:x", 4, 0, 1, 3), Key("C:x", 4, 0, 4, 4), 1},
		{"no older epoch at all", []FileInfo{cellFile(3, 0, 2, 2, 400)}, Key("C:x", 3, 0, 1, 1), Key("C:x", 3, 0, 2, 2), 0},
		{"a zero-page file that is not marker-sized", []FileInfo{
			cellFile(1, 0, 1, 1, 900), cellFile(2, 0, 2, 2, MarkerSize+1),
		}, Key("C:x", 2, 0, 1, 1), Key("C:x", 2, 0, 2, 2), 1},
		{"a marker-sized file spanning two TXIDs", []FileInfo{
			cellFile(1, 0, 1, 1, 900), cellFile(2, 0, 2, 3, MarkerSize),
		}, Key("C:x", 2, 0, 1, 1), Key("C:x", 2, 0, 2, 3), 1},
		{"older epoch continued by a marker lost its own snapshot", []FileInfo{
			cellFile(1, 0, 1, 1, 900),
			cellFile(2, 0, 2, 2, 400), cellFile(2, 0, 3, 5, 400),
			cellFile(3, 0, 6, 6, MarkerSize), cellFile(3, 0, 7, 7, 400),
		}, Key("C:x", 2, 0, 1, 1), Key("C:x", 2, 0, 2, 2), 1},
	}
	for _, c := range cases {
		_, err := PlanEpochs(c.files)
		var me *MissingSnapshotError
		if !errors.As(err, &me) {
			t.Errorf("%s: err = %v, want *MissingSnapshotError", c.name, err)
			continue
		}
		if me.Missing != c.missing || me.First != c.first || me.Older != c.older || me.Cell != "C:x" {
			t.Errorf("%s: %+v, want missing %s, first %s, older %d", c.name, me, c.missing, c.first, c.older)
		}
		msg := err.Error()
		for _, want := range []string{c.missing, c.first, "Put the missing file back"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message %q does not name %q", c.name, msg, want)
			}
		}
		if c.older != 0 && !strings.Contains(msg, "move "+EpochPrefix("C:x", me.Epoch)+" aside") {
			t.Errorf("%s: message %q does not say what to move aside", c.name, msg)
		}
	}
}

// TestPlanEpochsContinuations: what proves that an epoch continues an older
// one — a marker, or a compacted file at its base — with the marker also
// winning when a delta of the same TXID sits next to it.
func TestPlanEpochsContinuations(t *testing.T) {
	older := []FileInfo{cellFile(1, 0, 1, 1, 900), cellFile(1, 0, 2, 3, 400)}
	for name, opener := range map[string]FileInfo{
		"marker":          cellFile(2, 0, 4, 4, MarkerSize),
		"level-1 opener":  cellFile(2, 1, 4, 6, 5000),
		"level-9 at base": cellFile(2, 9, 4, 6, 5000),
	} {
		chain, err := PlanEpochs(append(append([]FileInfo{}, older...), opener, cellFile(2, 0, 7, 7, 400)))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(chain) != 4 {
			t.Errorf("%s: chain %v", name, spans(chain))
		}
	}
	// The lowest TXID holds both a marker and an ordinary file (in either
	// order): the marker decides.
	for _, files := range [][]FileInfo{
		{cellFile(2, 0, 4, 4, MarkerSize), cellFile(2, 0, 4, 5, 400)},
		{cellFile(2, 0, 4, 5, 400), cellFile(2, 0, 4, 4, MarkerSize)},
	} {
		if _, err := PlanEpochs(append(append([]FileInfo{}, older...), files...)); err != nil {
			t.Errorf("%v: %v", spans(files), err)
		}
	}
	// A lower file decides even when a marker-sized one comes first.
	files := append(append([]FileInfo{}, older...), cellFile(2, 0, 5, 5, MarkerSize), cellFile(2, 0, 4, 4, 400))
	var me *MissingSnapshotError
	if _, err := PlanEpochs(files); !errors.As(err, &me) || me.First != Key("C:x", 2, 0, 4, 4) {
		t.Errorf("lower non-marker file: %v", err)
	}
	// A complete newest epoch never looks at the older one, even when the
	// older one lost its snapshot.
	chain, err := PlanEpochs([]FileInfo{cellFile(1, 0, 2, 2, 400), cellFile(2, 0, 1, 1, 900), cellFile(2, 0, 2, 2, 400)})
	if err != nil || len(chain) != 2 || chain[0].Epoch != 2 || chain[1].Epoch != 2 {
		t.Errorf("complete newest epoch: %v %v", chain, err)
	}
}

// TestPlanIgnoresFilesBadInOneWay: each way a file can be unusable is
// enough on its own to leave it out.
func TestPlanIgnoresFilesBadInOneWay(t *testing.T) {
	good := []FileInfo{fi(0, 1, 1), fi(0, 2, 2)}
	for name, bad := range map[string]FileInfo{
		"min 0":            fi(0, 0, 5),
		"min above max":    fi(0, 4, 3),
		"negative level":   fi(-1, 1, 5),
		"level above max":  fi(MaxLevel+1, 1, 5),
		"level above 9 l1": fi(MaxLevel+1, 3, 3),
	} {
		plan, err := Plan(append(append([]FileInfo{}, good...), bad))
		if err != nil || !equalSpans(spans(plan), [][3]uint64{{0, 1, 1}, {0, 2, 2}}) {
			t.Errorf("%s: plan %v, %v", name, spans(plan), err)
		}
	}
	// Level 9 itself is a level a reader lists.
	plan, err := Plan([]FileInfo{fi(0, 1, 1), fi(MaxLevel, 2, 3)})
	if err != nil || len(plan) != 2 {
		t.Errorf("level 9 delta: %v %v", spans(plan), err)
	}
}

// TestPlanErrorWhenNothingQualifies: no usable file at all is
// ErrTxNotAvailable; files that all end past the target name the target.
func TestPlanErrorWhenNothingQualifies(t *testing.T) {
	if _, err := Plan([]FileInfo{fi(0, 0, 1), fi(-1, 1, 1)}); !errors.Is(err, ErrTxNotAvailable) {
		t.Errorf("only unusable files: %v", err)
	}
	if _, err := PlanTo(nil, 5); !errors.Is(err, ErrTxNotAvailable) {
		t.Errorf("no files, target 5: %v", err)
	}
	_, err := PlanTo([]FileInfo{fi(0, 1, 4), fi(0, 5, 5)}, 3)
	var te *TXIDNotRestorableError
	if !errors.As(err, &te) || te.Want != 3 || te.Nearest != 0 {
		t.Errorf("every file ends past 3: %v", err)
	}
	if errors.Is(err, ErrTxNotAvailable) {
		t.Errorf("every file ends past 3 is not 'no files': %v", err)
	}
	if !strings.Contains(err.Error(), "no restorable TXID at or below it") {
		t.Errorf("message: %v", err)
	}
}

// TestPlanTieBreaksOnSmallerMin: two files reaching equally far, the one
// starting earlier wins even over a higher level.
func TestPlanTieBreaksOnSmallerMin(t *testing.T) {
	for _, files := range [][]FileInfo{
		{fi(9, 1, 1), fi(0, 1, 4), fi(1, 2, 4)},
		{fi(9, 1, 1), fi(1, 2, 4), fi(0, 1, 4)},
	} {
		plan, err := Plan(files)
		if err != nil || !equalSpans(spans(plan), [][3]uint64{{9, 1, 1}, {0, 1, 4}}) {
			t.Errorf("%v: plan %v, %v", spans(files), spans(plan), err)
		}
	}
	if !better(fi(0, 1, 4), fi(1, 2, 4)) || better(fi(1, 2, 4), fi(0, 1, 4)) {
		t.Error("better does not prefer the smaller MinTXID at equal MaxTXID")
	}
}

// TestGapErrorNextIsTheNearestFile: with several files past a gap, Next is
// the lowest start among them, whatever their order.
func TestGapErrorNextIsTheNearestFile(t *testing.T) {
	for _, files := range [][]FileInfo{
		{fi(0, 1, 1), fi(0, 9, 9), fi(0, 4, 4), fi(0, 6, 7)},
		{fi(0, 1, 1), fi(0, 4, 4), fi(0, 9, 9), fi(0, 6, 7)},
		{fi(0, 6, 7), fi(0, 9, 9), fi(0, 1, 1), fi(0, 4, 4)},
	} {
		_, err := Plan(files)
		var ge *GapError
		if !errors.As(err, &ge) || ge.After != 1 || ge.Next != 4 {
			t.Errorf("%v: %v (%+v)", spans(files), err, ge)
			continue
		}
		if want := "TXIDs 2..3 are missing (chain ends at 1, next file starts at 4)"; !strings.Contains(err.Error(), want) {
			t.Errorf("message %q, want %q", err, want)
		}
	}
}
