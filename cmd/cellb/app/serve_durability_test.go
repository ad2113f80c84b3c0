package app

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// modesToServe are the --durability modes (every mode of the CLI's
// registry), each with a driver it runs on.
func modesToServe() []struct{ mode, driver string } {
	var out []struct{ mode, driver string }
	for _, m := range durabilityModes() {
		drv := "wasm"
		if m.NeedsSessions {
			drv = "modernc"
		}
		out = append(out, struct{ mode, driver string }{m.Name, drv})
	}
	return out
}

// serveThenClose runs a server on dir in cfg's mode, lets calls use its
// URL, and shuts it down in order (backups take their final save then).
func serveThenClose(t *testing.T, cfg serveConfig, calls func(url string)) {
	t.Helper()
	ctx := context.Background()
	s, err := newServer(ctx, cfg, nil, nil, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.handler())
	calls(hs.URL)
	hs.Close()
	if err := s.close(ctx); err != nil {
		t.Fatal(err)
	}
}

// Each --durability mode keeps the counter in the bucket: after the local
// files are lost, a node in the same mode restores them.
func TestServeDurabilityModesRestore(t *testing.T) {
	for _, tc := range modesToServe() {
		t.Run(tc.mode, func(t *testing.T) {
			dir := t.TempDir()
			cfg := serveConfig{Data: dir, Driver: tc.driver, ScriptName: "x", Idle: time.Minute, Durability: tc.mode}
			serveThenClose(t, cfg, func(url string) {
				for i := 0; i < 4; i++ {
					call(t, "POST", url+"/counter/keep")
				}
			})
			if err := os.RemoveAll(filepath.Join(dir, "cells")); err != nil {
				t.Fatal(err)
			}
			_, hs2 := startServer(t, cfg)
			if a := call(t, "GET", hs2.URL+"/counter/keep"); a.value != 4 {
				t.Fatalf("after losing the local files: %+v, want 4 from the bucket", a)
			}
		})
	}
}

func TestServeDurabilityFlag(t *testing.T) {
	for _, bad := range [][]string{
		{"--durability", "nope"},
		{"--durability", "changeset", "--driver", "wasm"},
	} {
		if _, err := parseServe(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	for _, good := range [][]string{
		{},
		{"--durability", "backup"},
		{"--durability", "changeset", "--driver", "modernc"},
	} {
		if _, err := parseServe(good); err != nil {
			t.Errorf("%v: %v", good, err)
		}
	}
}
