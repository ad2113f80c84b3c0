package cell

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/wakeport"
)

func TestWakeEpochText(t *testing.T) {
	for _, n := range []uint64{0, 1, 0xff, 0x0123456789abcdef, 1<<64 - 1} {
		s := formatWakeEpoch(n)
		if len(s) != 16 || s != strings.ToLower(s) {
			t.Errorf("formatWakeEpoch(%d) = %q, want 16 lowercase hex digits", n, s)
		}
		got, err := parseWakeEpoch(s)
		if err != nil || got != n {
			t.Errorf("parseWakeEpoch(%q) = %d, %v; want %d", s, got, err, n)
		}
	}
	// Text order is numeric order: the raise on open compares text.
	if !(formatWakeEpoch(9) < formatWakeEpoch(10) && formatWakeEpoch(0xff) < formatWakeEpoch(0x100)) {
		t.Error("epoch text does not sort numerically")
	}
	for _, bad := range []string{"", "1", "000000000000000G", "000000000000000A", "+000000000000001",
		"00000000000000001", " 000000000000001", "0x00000000000001"} {
		if n, err := parseWakeEpoch(bad); err == nil {
			t.Errorf("parseWakeEpoch(%q) = %d, want an error", bad, n)
		}
	}
}

func FuzzParseWakeEpoch(f *testing.F) {
	for _, s := range []string{"0000000000000000", "ffffffffffffffff", "000000000000000A", "", "00000000000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseWakeEpoch(s)
		if err != nil {
			return
		}
		// Only the canonical form parses: it must render back unchanged.
		if back := formatWakeEpoch(n); back != s {
			t.Fatalf("parseWakeEpoch(%q) = %d, which renders as %q", s, n, back)
		}
	})
}

func TestScanWakeRowRejectsNegativeSequence(t *testing.T) {
	if _, err := scanWakeRow("0000000000000001", -1); err == nil {
		t.Error("a negative sequence was accepted")
	}
	w, err := scanWakeRow("000000000000002a", 7)
	if err != nil || w.epoch != 42 || w.seq != 7 {
		t.Errorf("scanWakeRow = %+v, %v; want epoch 42 seq 7", w, err)
	}
}

func TestPublishedDurableNamesThePublication(t *testing.T) {
	at := int64(5)
	p := wakeport.Publication{Cell: "C:x", Epoch: 3, Seq: 9, AtMs: &at}
	cause := errors.New("put refused")
	err := publishedDurable{durability.Resolved(cause), p}.Err()
	var perr *wakeport.PublishError
	if !errors.As(err, &perr) || perr.Publication != p || !errors.Is(err, cause) {
		t.Fatalf("Err() = %v; want a *wakeport.PublishError for %+v wrapping the cause", err, p)
	}
	if !strings.Contains(err.Error(), "0000000000000003-0000000000000009") {
		t.Errorf("the error %q does not name the identity", err)
	}
	if err := (publishedDurable{durability.Resolved(nil), p}).Err(); err != nil {
		t.Errorf("a successful publication reports %v", err)
	}
}

// noDriver opens nothing: Wake must refuse bad keys before any activation.
type noDriver struct{}

func (noDriver) Name() string                      { return "none" }
func (noDriver) Capabilities() driver.Capabilities { return driver.Capabilities{} }
func (noDriver) Open(context.Context, driver.Config) (driver.Conn, error) {
	return nil, errors.New("noDriver opens nothing")
}

func TestWakeRefusesKeysThatNameNoCell(t *testing.T) {
	rt, err := New(Options{ScriptName: "s", Driver: noDriver{}, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	if _, err := Register(rt, "Room", func(ctx context.Context, st *State) (any, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	good := IDFromName("s", "Room", "a").String()
	other := IDFromName("other-script", "Room", "a").String()
	ctx := context.Background()

	var keyErr *InvalidCellKeyError
	for _, k := range []string{"", "Room", "Room:", "Room:a/b"} {
		if err := rt.Wake(ctx, k); !errors.As(err, &keyErr) {
			t.Errorf("Wake(%q) = %v, want an *InvalidCellKeyError", k, err)
		}
	}
	if err := rt.Wake(ctx, "Hall:"+good); !errors.Is(err, ErrUnknownClass) {
		t.Errorf("Wake of an unregistered class = %v, want ErrUnknownClass", err)
	}
	var idErr *InvalidIDError
	for _, id := range []string{"abc", other} {
		if err := rt.Wake(ctx, "Room:"+id); !errors.As(err, &idErr) {
			t.Errorf("Wake(Room:%s) = %v, want an *InvalidIDError", id, err)
		}
	}
	// A good key reaches activation, whose failure comes back as is.
	var aerr *ActivationError
	if err := rt.Wake(ctx, "Room:"+good); !errors.As(err, &aerr) || aerr.Key != "Room:"+good {
		t.Errorf("Wake of a valid key = %v, want the *ActivationError of Room:%s", err, good)
	}
}
