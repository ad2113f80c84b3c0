package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
)

// cellb serve --idle-conn: the served cells close their database files
// once idle that long, and answer on.
func TestServeIdleConnFlag(t *testing.T) {
	if openUnder(os.TempDir()) < 0 {
		t.Skip("no /proc/self/fd")
	}
	if cfg, err := parseServe(nil); err != nil || cfg.IdleConn != cell.DefaultIdleConnTimeout {
		t.Fatalf("default --idle-conn: %v, %v", cfg.IdleConn, err)
	}
	dir := t.TempDir()
	cfg, err := parseServe([]string{"--data", dir, "--idle-conn", "30ms"})
	if err != nil {
		t.Fatal(err)
	}
	_, hs := startServer(t, cfg)
	for i := 1; i <= 3; i++ {
		if a := call(t, "POST", hs.URL+"/counter/apples"); a.status != 200 || a.value != int64(i) {
			t.Fatalf("POST %d: %+v", i, a)
		}
		// Well before the default's 10 s.
		deadline := time.Now().Add(5 * time.Second)
		for openUnder(filepath.Join(dir, "cells")) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("descriptors still open under the cells directory after 5 s with --idle-conn 30ms")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// openUnder counts the process's file descriptors open on files under dir
// (-1 where /proc/self/fd cannot be read).
func openUnder(dir string) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}
