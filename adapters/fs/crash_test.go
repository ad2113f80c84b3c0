//go:build unix

package fs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/store"
)

// TestCrashMidPut kills a writer process with SIGKILL at each step of a Put
// — before its sidecar is replaced, between the sidecar and the body's
// rename, and after the rename — while it holds the key's lock. Readers
// then see the old object or the new one, each whole and with its own
// version and metadata; the temporary files it left are never listed; the
// next writer gets the lock at once and writes on the version it read;
// and an Open after the expiry removes the debris.
func TestCrashMidPut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, layout := range layouts {
		for _, step := range []string{"before-sidecar", "before-data", "after-data"} {
			if step == "before-sidecar" && !layout.sidecars {
				continue
			}
			t.Run(layout.name+"/"+step, func(t *testing.T) {
				dir := t.TempDir()
				h := newHub(t, dir)
				s := openT(t, dir, layout.opts...)
				const key = "cells/Counter:abc/own.json"
				v1 := putT(t, s, key, "old", store.PutOptions{Metadata: map[string]string{"gen": "1"}})

				env := []string{childStopEnv + "=" + step}
				if layout.sidecars {
					env = append(env, childSidecarsEnv+"=1")
				}
				c := h.start(1, env...)
				c.send(t, "put %s new 2", key)
				if ev := h.next(answerTimeout); ev.line != "stopped "+step {
					t.Fatalf("child said %q: %s", ev.line, ev.c.stderr)
				}
				c.kill()

				applied := step == "after-data"
				r := openT(t, dir, WithTempExpiry(0))
				o := getT(t, r, key)
				switch {
				case !applied && (string(o.Data) != "old" || o.Version != v1 || o.Metadata["gen"] != "1"):
					t.Fatalf("crash %s: read %q version %q metadata %v, want the old object", step, o.Data, o.Version, o.Metadata)
				case applied && (string(o.Data) != "new" || o.Version == v1 || o.Metadata["gen"] != "2"):
					t.Fatalf("crash %s: read %q version %q metadata %v, want the new object", step, o.Data, o.Version, o.Metadata)
				}
				l := listAll(t, r, store.ListOptions{})
				if len(l.Objects) != 1 || l.Objects[0].Key != key || l.Objects[0].Version != o.Version {
					t.Fatalf("crash %s: listing %+v", step, l.Objects)
				}
				temps := countTemps(t, dir)
				if !applied && temps == 0 {
					t.Fatalf("crash %s left no temporary file; the test did not crash mid-write", step)
				}

				// The dead writer's lock is free at once.
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				v3, err := r.Put(ctx, key, []byte("next"), store.PutOptions{Condition: store.IfVersion(o.Version)})
				if err != nil {
					t.Fatalf("crash %s: the next writer: %v", step, err)
				}
				if o := getT(t, s, key); o.Version != v3 || string(o.Data) != "next" {
					t.Fatalf("crash %s: after the next write: %q %q", step, o.Data, o.Version)
				}

				// Debris older than the expiry goes at the next Open.
				old := time.Now().Add(-2 * DefaultTempExpiry)
				ents, _ := os.ReadDir(filepath.Join(dir, tmpDir))
				for _, e := range ents {
					os.Chtimes(filepath.Join(dir, tmpDir, e.Name()), old, old)
				}
				openT(t, dir)
				if n := countTemps(t, dir); n != 0 {
					t.Fatalf("crash %s: %d temporary files survived the sweep", step, n)
				}
				if o := getT(t, s, key); o.Version != v3 {
					t.Fatalf("the sweep changed the object: %q", o.Version)
				}
				if got := tree(t, dir); len(got) != 5 || !strings.HasPrefix(got[key], "next") {
					t.Fatalf("directory after the crash: %q", got)
				}
			})
		}
	}
}

// TestCrashMidPutOfANewKey kills a writer with SIGKILL while it creates a
// key in a directory that exists (an unnamed file linked under the key):
// holding the key's lock just before the link, and just after it. Before,
// the key does not exist and nothing is left behind, not even a temporary
// file (the kernel frees the unnamed one); after, the object is whole with
// its version. Either way the next writer gets the lock at once.
func TestCrashMidPutOfANewKey(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, step := range []string{"before-link", "after-link"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			if !attrsWork(t, dir) {
				t.Skip("no user extended attributes: new keys are not linked")
			}
			h := newHub(t, dir)
			s := openT(t, dir)
			const prefix = "log/n1/0000000001/bundle/"
			putT(t, s, prefix+"e1-00000001.ltxb", "first", store.PutOptions{})
			key := prefix + "e1-00000002.ltxb"

			c := h.start(1, childStopEnv+"="+step)
			c.send(t, "create-key %s second", key)
			if ev := h.next(answerTimeout); ev.line != "stopped "+step {
				t.Fatalf("child said %q: %s", ev.line, ev.c.stderr)
			}
			c.kill()

			r := openT(t, dir, WithTempExpiry(0))
			o, err := r.Get(t.Context(), key)
			switch {
			case step == "before-link" && !errors.Is(err, store.ErrNotFound):
				t.Fatalf("crash %s: Get = %v, %v; want ErrNotFound", step, o, err)
			case step == "after-link" && (err != nil || string(o.Data) != "second" || o.Version == "" || strings.HasPrefix(string(o.Version), "x-")):
				t.Fatalf("crash %s: Get = %+v, %v; want the whole object with its own version", step, o, err)
			}
			if n := countTemps(t, dir); n != 0 {
				t.Fatalf("crash %s left %d temporary files", step, n)
			}
			l := listAll(t, r, store.ListOptions{})
			if want := map[string]int{"before-link": 1, "after-link": 2}[step]; len(l.Objects) != want {
				t.Fatalf("crash %s: listing %+v", step, l.Objects)
			}

			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err = r.Put(ctx, key, []byte("next"), store.PutOptions{Condition: store.IfAbsent})
			if step == "before-link" && err != nil || step == "after-link" && !errors.Is(err, store.ErrPreconditionFailed) {
				t.Fatalf("crash %s: the next writer: %v", step, err)
			}
		})
	}
}
