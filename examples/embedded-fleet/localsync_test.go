package main

import (
	"context"
	"errors"
	"testing"

	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store/memstore"
	"github.com/cellb/cellb/drivers/wasm"
)

// TestHostChecksLocalDurability: a node whose local file is the primary
// copy refuses a driver that would lose acknowledged commits in a power
// failure (a fleet's synchronous=OFF copied into a single-host program),
// and accepts what each ownership and mode needs.
func TestHostChecksLocalDurability(t *testing.T) {
	wal := func(sync string) *wasm.Driver {
		return wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous="+sync))
	}
	rollback := func(sync string) *wasm.Driver { return wasm.New(wasm.WithPragmas("synchronous=" + sync)) }
	for _, c := range []struct {
		name   string
		cfg    host.Config
		refuse bool
	}{
		{"fleet, OFF", host.Config{Driver: wal("OFF"), Ownership: host.Fleet, Mode: ltxlog.Mode()}, false},
		{"single host, LTX log, OFF", host.Config{Driver: wal("OFF"), Ownership: host.SingleHost, Mode: ltxlog.Mode()}, true},
		{"single host, LTX log, NORMAL in WAL", host.Config{Driver: wal("NORMAL"), Ownership: host.SingleHost, Mode: ltxlog.Mode()}, false},
		{"single host, LTX log, NORMAL with a rollback journal", host.Config{Driver: rollback("NORMAL"), Ownership: host.SingleHost, Mode: ltxlog.Mode()}, true},
		{"single host, no mode, NORMAL", host.Config{Driver: wal("NORMAL"), Ownership: host.SingleHost}, true},
		{"single host, no mode, FULL", host.Config{Driver: wal("FULL"), Ownership: host.SingleHost}, false},
		{"no ownership, no mode, OFF", host.Config{Driver: wal("OFF"), Ownership: host.NoOwnership}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.DataDir = t.TempDir()
			cfg.Bucket = memstore.New()
			h, err := host.New(context.Background(), cfg)
			if err == nil {
				defer h.Close(context.Background())
			}
			var lde *host.LocalDurabilityError
			switch {
			case c.refuse && (!errors.As(err, &lde) || !errors.Is(err, host.ErrConfig)):
				t.Fatalf("host.New: %v, want a *host.LocalDurabilityError matching ErrConfig", err)
			case !c.refuse && err != nil:
				t.Fatalf("host.New: %v", err)
			}
		})
	}
}
