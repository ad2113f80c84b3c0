package app

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/backup"
	"github.com/cellb/cellb/core/changeset"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/ltxlog"
)

// TestNodeSyncPicksTheLocalSync: a single-host node whose log acknowledges
// from the bucket (LTX, changeset) runs SQLite with synchronous=NORMAL in
// WAL mode (consistent after a power loss; a file that may lack
// acknowledged commits is rebuilt from the bucket, or, where the system
// names no boot, synced once per group commit); under the backup log, which acknowledges at once,
// SQLite syncs every commit (FULL); a fleet node never syncs (OFF). Checked
// on the open connection of every pure-Go driver.
func TestNodeSyncPicksTheLocalSync(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		ownership host.Ownership
		mode      durability.Mode
		want      int64 // PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL
	}{
		{"local-primary/ltx", host.SingleHost, ltxlog.Mode(), 1},
		{"local-primary/changeset", host.SingleHost, changeset.Mode(), 1},
		{"local-primary/backup", host.SingleHost, backup.Mode(), 2},
		{"fleet/ltx", host.Fleet, ltxlog.Mode(), 0},
	} {
		for _, name := range []string{"wasm", "modernc"} {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				d, err := pickDriver(name, host.Synchronous(c.ownership, c.mode))
				if err != nil {
					t.Fatal(err)
				}
				conn, err := d.Open(ctx, driver.Config{Path: filepath.Join(t.TempDir(), "x.db")})
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				rows, err := conn.Query(ctx, "PRAGMA synchronous")
				if err != nil {
					t.Fatal(err)
				}
				var got int64 = -1
				for rows.Next() {
					got, _ = rows.Values()[0].(int64)
				}
				rows.Close()
				if got != c.want {
					t.Fatalf("synchronous = %d, want %d", got, c.want)
				}
			})
		}
	}
}
