package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltxlog"
)

// serveUsage is serve's usage text for a registry of modes.
func serveUsage(modes durability.Modes) string {
	var b strings.Builder
	serveFlags(&serveConfig{}, modes).Usage(&b)
	return b.String()
}

// Both usage texts list the modes of the registry they are given.
func TestUsageListsRegistryModes(t *testing.T) {
	all := durabilityModes()
	if got := serveUsage(all); !strings.Contains(got, "what the bucket keeps: ltx|changeset|backup (default ltx)") {
		t.Fatalf("serve usage:\n%s", got)
	}
	if code, got, _ := runCLI(t, "restore", "--help"); code != 0 || !strings.Contains(got, "restore from: ltx|changeset|backup") {
		t.Fatalf("restore usage:\n%s", got)
	}
	one := durability.Modes{ltxlog.Mode()}
	if got := serveUsage(one); !strings.Contains(got, "what the bucket keeps: ltx (default ltx)") {
		t.Fatalf("serve usage of a registry with only ltx:\n%s", got)
	}
}

// serve --durability and restore --from look a name up in the same
// registry: an unknown name is refused by both with the same list.
func TestDurabilityAndRestoreShareModes(t *testing.T) {
	const want = `unknown durability mode "nope" (want ltx, changeset or backup)`
	code, _, stderr := runCLI(t, "serve", "--durability", "nope")
	if code != 2 || !strings.Contains(stderr, "--durability: "+want) {
		t.Fatalf("serve --durability nope: exit %d, %q", code, stderr)
	}
	bucket := "file://" + t.TempDir()
	code, _, stderr = runCLI(t, "restore", bucket, "Counter:x", filepath.Join(t.TempDir(), "out.db"), "--from", "nope")
	if code != 2 || !strings.Contains(stderr, "--from: "+want) {
		t.Fatalf("restore --from nope: exit %d, %q", code, stderr)
	}
	// Every mode of the registry is accepted by serve.
	for _, m := range durabilityModes() {
		args := []string{"--durability", m.Name}
		if m.NeedsSessions {
			args = append(args, "--driver", "modernc")
		}
		if _, err := parseServe(args); err != nil {
			t.Fatalf("parseServe(%v): %v", args, err)
		}
	}
	if _, err := parseServe([]string{"--durability", "changeset", "--driver", "wasm"}); err == nil ||
		err.Error() != "--durability changeset needs --driver modernc (the only driver with SQLite sessions)" {
		t.Fatalf("changeset on wasm: %v", err)
	}
}
