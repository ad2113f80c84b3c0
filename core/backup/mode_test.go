package backup

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/store/memstore"
)

// Backups restore only their newest state: a point in time is refused
// before anything is read.
func TestModeRefusesPointInTime(t *testing.T) {
	var pe *durability.NoPointInTimeError
	_, err := Mode().Restore(context.Background(), memstore.New(), cell, durability.RestoreRequest{TXID: 3}, nil)
	if !errors.As(err, &pe) || pe.Mode != "backup" {
		t.Fatalf("err = %v, want *NoPointInTimeError", err)
	}
	if Mode().PointInTime || Mode().Name != "backup" {
		t.Fatalf("mode %+v", Mode())
	}
}

// A backup restore reports progress from 0% to 100% (issue 14: every
// restore source shows progress, not only the LTX log).
func TestModeRestoreReportsProgress(t *testing.T) {
	s := memstore.New()
	r := newRig(t, s, false, 10)
	r.commit(rand.New(rand.NewPCG(3, 4)))
	if err := r.tick(); err != nil {
		t.Fatal(err)
	}
	var first, last [2]int64
	calls := 0
	out := &memSink{}
	_, err := Mode().Restore(context.Background(), s, cell, durability.RestoreRequest{Progress: func(d, t int64) {
		if calls == 0 {
			first = [2]int64{d, t}
		}
		last = [2]int64{d, t}
		calls++
	}}, out)
	if err != nil {
		t.Fatal(err)
	}
	if calls < 2 || first[0] != 0 || first[1] == 0 || last[0] != last[1] {
		t.Fatalf("progress: %d calls, first %v, last %v; want (0, total) first and (total, total) last", calls, first, last)
	}
}

// memSink is a RestoreSink in memory.
type memSink struct{ b []byte }

func (m *memSink) WriteAt(p []byte, off int64) (int, error) {
	if n := int(off) + len(p); n > len(m.b) {
		m.b = append(m.b, make([]byte, n-len(m.b))...)
	}
	return copy(m.b[off:], p), nil
}

func (m *memSink) Truncate(size int64) error {
	if int(size) <= len(m.b) {
		m.b = m.b[:size]
	} else {
		m.b = append(m.b, make([]byte, int(size)-len(m.b))...)
	}
	return nil
}
