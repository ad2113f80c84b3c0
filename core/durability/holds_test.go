package durability_test

import (
	"context"
	"testing"

	"github.com/cellb/cellb/core/backup"
	"github.com/cellb/cellb/core/changeset"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// countingStore counts listings.
type countingStore struct {
	store.Store
	lists int
}

func (s *countingStore) List(ctx context.Context, o store.ListOptions) (store.ListPage, error) {
	s.lists++
	return s.Store.List(ctx, o)
}

// The changeset log and backups are Probers: a cell with nothing under
// its prefix is empty after one listing; any object under it (another
// cell's does not count) is something held.
func TestChangesetAndBackupLogsProbe(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		open func(store.Store) durability.Log
		key  string
	}{
		{"changeset", func(s store.Store) durability.Log { l, _ := changeset.New(changeset.Options{Store: s}); return l }, changeset.Key("C:a", 1, 1, 1, true)},
		{"backup", func(s store.Store) durability.Log { l, _ := backup.New(backup.Options{Store: s}); return l }, backup.Key("C:a", 1, 1)},
	} {
		s := &countingStore{Store: memstore.New()}
		p, ok := tc.open(s).(durability.Prober)
		if !ok {
			t.Fatalf("%s: the log is not a durability.Prober", tc.name)
		}
		if _, err := s.Put(ctx, layout.CellPrefix("C:ab")+"x", []byte("x"), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		held, err := p.Holds(ctx, "C:a")
		if err != nil || held || s.lists != 1 {
			t.Fatalf("%s: empty cell: held %v, %v, %d listings", tc.name, held, err, s.lists)
		}
		if _, err := s.Put(ctx, tc.key, []byte("x"), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if held, err := p.Holds(ctx, "C:a"); err != nil || !held {
			t.Fatalf("%s: a cell with %s: held %v, %v", tc.name, tc.key, held, err)
		}
	}
}
