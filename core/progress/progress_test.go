package progress_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/cellb/cellb/core/progress"
)

// Off a terminal, a Bar writes one line per tenth reached, none for an
// unknown total, and nothing after the end.
func TestBarLinesAtEachTenth(t *testing.T) {
	var buf bytes.Buffer
	b := progress.NewBar(&buf, "restore Room:a")
	b.Update(1, 0) // unknown total
	for done := int64(0); done <= 2048; done += 128 {
		b.Update(done, 2048)
	}
	b.Update(2048, 2048) // after the end
	want := []string{
		"restore Room:a: 0% (0 B of 2.0 KiB)",
		"restore Room:a: 12% (256 B of 2.0 KiB)",
		"restore Room:a: 25% (512 B of 2.0 KiB)",
		"restore Room:a: 31% (640 B of 2.0 KiB)",
		"restore Room:a: 43% (896 B of 2.0 KiB)",
		"restore Room:a: 50% (1.0 KiB of 2.0 KiB)",
		"restore Room:a: 62% (1.2 KiB of 2.0 KiB)",
		"restore Room:a: 75% (1.5 KiB of 2.0 KiB)",
		"restore Room:a: 81% (1.6 KiB of 2.0 KiB)",
		"restore Room:a: 93% (1.9 KiB of 2.0 KiB)",
		"restore Room:a: 100% (2.0 KiB of 2.0 KiB)",
	}
	if got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Updates from many goroutines write whole lines, one per tenth.
func TestBarConcurrentUpdates(t *testing.T) {
	var buf bytes.Buffer
	b := progress.NewBar(&buf, "x")
	var wg sync.WaitGroup
	for i := range 25 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := int64(i); done <= 1000; done += 25 {
				b.Update(done, 1000)
			}
		}()
	}
	wg.Wait()
	for line := range strings.Lines(buf.String()) {
		if !strings.HasPrefix(line, "x: ") || !strings.HasSuffix(line, " of 1000 B)\n") {
			t.Fatalf("torn line %q in:\n%s", line, &buf)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 2 << 20: "2.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := progress.Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// A counter spells counts in its unit, not bytes.
func TestCounterSpellsItsUnit(t *testing.T) {
	var buf bytes.Buffer
	b := progress.NewCounter(&buf, "inspect", "cells")
	for done := int64(0); done <= 2048; done += 1024 {
		b.Update(done, 2048)
	}
	want := "inspect: 0% (0 of 2048 cells)\ninspect: 50% (1024 of 2048 cells)\ninspect: 100% (2048 of 2048 cells)\n"
	if buf.String() != want {
		t.Fatalf("lines:\n%s\nwant:\n%s", buf.String(), want)
	}
}
