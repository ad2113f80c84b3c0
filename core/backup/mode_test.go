package backup

import (
	"context"
	"errors"
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
