package changeset

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/store/memstore"
)

// The changeset log restores only its newest state, and only through a
// scratch database with sessions.
func TestModeRestoreRefusals(t *testing.T) {
	ctx := context.Background()
	var pe *durability.NoPointInTimeError
	_, err := Mode().Restore(ctx, memstore.New(), "C:a", durability.RestoreRequest{TXID: 3}, nil)
	if !errors.As(err, &pe) || pe.Mode != "changeset" {
		t.Fatalf("err = %v, want *NoPointInTimeError", err)
	}
	_, err = Mode().Restore(ctx, memstore.New(), "C:a", durability.RestoreRequest{}, nil)
	if err == nil || !strings.Contains(err.Error(), "RestoreRequest.Scratch") {
		t.Fatalf("err = %v, want the missing scratch database named", err)
	}
	if !Mode().NeedsSessions || Mode().PointInTime {
		t.Fatalf("mode %+v", Mode())
	}
}
