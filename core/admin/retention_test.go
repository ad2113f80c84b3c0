package admin

import (
	"context"
	"testing"
)

// A cell whose LTX log keeps a retention window (core/ltxlog's ladder)
// holds, beside its newest chain, the files of older states: older full
// files, blocks and level-0 files they overlap, and an older epoch. None
// of it is a finding: the newest chain plans as before, and the extra
// files end before it or inside it.
func TestInspectRetainedHistoryIsHealthy(t *testing.T) {
	s := seed(t)
	const cell = "Counter:retained"
	putOwn(t, s, cell, "n1", 3)
	putLTX(t, s, cell, 2, 0, 1, 1, 100) // an older epoch, kept for the window
	putLTX(t, s, cell, 2, 0, 2, 2, 100)
	putLTX(t, s, cell, 3, 0, 1, 1, 100) // the snapshot: era 0's anchor
	putLTX(t, s, cell, 3, 0, 2, 2, 50)  // position 1
	putLTX(t, s, cell, 3, 1, 2, 3, 60)  // block (0, 2]
	putLTX(t, s, cell, 3, 0, 4, 4, 50)  // position 3
	putLTX(t, s, cell, 3, 1, 2, 5, 70)  // block (0, 4]
	putLTX(t, s, cell, 3, 1, 1, 5, 100) // a full merge: era 1's anchor
	putLTX(t, s, cell, 3, 0, 6, 6, 50)  // era 1, position 1
	putLTX(t, s, cell, 3, 1, 6, 7, 60)  // era 1, block (0, 2]
	c, err := InspectCell(context.Background(), s, cell, opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Findings) != 0 || c.NewestTXID != 7 || c.LogEpoch != 3 {
		t.Fatalf("a retained history: newest %d epoch %d, findings %+v", c.NewestTXID, c.LogEpoch, c.Findings)
	}
}
