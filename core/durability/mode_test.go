package durability_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// testModes is a registry of the three logs' names and prefixes; Open and
// Restore are not needed to look modes up or detect them.
func testModes() durability.Modes {
	var ms durability.Modes
	for _, l := range layout.Logs() {
		ms = append(ms, durability.Mode{Log: l})
	}
	return ms
}

func TestModesLookup(t *testing.T) {
	ms := testModes()
	for _, name := range []string{"ltx", "changeset", "backup"} {
		m, err := ms.Lookup(name)
		if err != nil || m.Name != name {
			t.Fatalf("Lookup(%q) = %q, %v", name, m.Name, err)
		}
	}
	if got := ms.Names(); !slices.Equal(got, []string{"ltx", "changeset", "backup"}) {
		t.Fatalf("Names() = %v", got)
	}
}

// An unknown name's error lists every known mode, in the registry's order.
func TestModesLookupUnknownListsKnown(t *testing.T) {
	_, err := testModes().Lookup("litestream")
	var ue *durability.UnknownModeError
	if !errors.As(err, &ue) || ue.Name != "litestream" {
		t.Fatalf("err = %v, want *UnknownModeError", err)
	}
	const want = `unknown durability mode "litestream" (want ltx, changeset or backup)`
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if _, err := (durability.Modes{}).Lookup("ltx"); err == nil {
		t.Fatal("an empty registry found a mode")
	}
}

func put(t *testing.T, s store.Store, key string) {
	t.Helper()
	if _, err := s.Put(context.Background(), key, []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Detect finds the one log a bucket holds for a cell, whichever it is,
// and ignores other cells' logs.
func TestModesDetectEachLog(t *testing.T) {
	for _, l := range layout.Logs() {
		t.Run(l.Name, func(t *testing.T) {
			s := memstore.New()
			put(t, s, l.Prefix("C:a")+"e1/file")
			// Another cell whose key extends this one's holds a different log.
			other := layout.Backup()
			if l.Name == other.Name {
				other = layout.LTX()
			}
			put(t, s, other.Prefix("C:ab")+"e1/file")
			m, err := testModes().Detect(context.Background(), s, "C:a")
			if err != nil || m.Name != l.Name {
				t.Fatalf("Detect = %q, %v; want %q", m.Name, err, l.Name)
			}
		})
	}
}

func TestModesDetectNone(t *testing.T) {
	s := memstore.New()
	put(t, s, "cells/C:a/own.json")
	_, err := testModes().Detect(context.Background(), s, "C:a")
	var ne *durability.NoLogError
	if !errors.As(err, &ne) || ne.Cell != "C:a" {
		t.Fatalf("err = %v, want *NoLogError", err)
	}
	const want = "the bucket holds no ltx, changeset or backup files for this cell (under cells/C:a/)"
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

func TestModesDetectSeveral(t *testing.T) {
	s := memstore.New()
	put(t, s, layout.LTX().Prefix("C:a")+"e1/0000000000000001-0000000000000001.ltx")
	put(t, s, layout.Backup().Prefix("C:a")+"e2/0000000000000001.db")
	_, err := testModes().Detect(context.Background(), s, "C:a")
	var se *durability.SeveralLogsError
	if !errors.As(err, &se) || !slices.Equal(se.Found, []string{"ltx", "backup"}) {
		t.Fatalf("err = %v, want *SeveralLogsError naming ltx and backup", err)
	}
}
