// Package progress shows how far a long operation got, for command-line
// programs: Bar takes the (done, total) bytes callbacks such as
// durability.RestoreRequest.Progress, and Size spells byte counts.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// Bar shows how far a long operation got on w: a redrawn bar when w is a
// terminal, and a line at every tenth otherwise (logs, pipes). It is safe
// for concurrent use.
type Bar struct {
	w     io.Writer
	label string
	tty   bool
	unit  string // "": bytes (Size); else counts of unit

	mu       sync.Mutex
	lastPct  int
	lastTen  int
	finished bool
}

// NewBar returns a Bar that writes to w, each line or bar starting with
// label.
func NewBar(w io.Writer, label string) *Bar {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &Bar{w: w, label: label, tty: tty, lastPct: -1, lastTen: -1}
}

// NewCounter returns a Bar that counts things rather than bytes: "inspect:
// 40% (400 of 1000 cells)" with unit "cells".
func NewCounter(w io.Writer, label, unit string) *Bar {
	b := NewBar(w, label)
	b.unit = unit
	return b
}

// amount spells n in the bar's unit.
func (p *Bar) amount(n int64) string {
	if p.unit == "" {
		return Size(n)
	}
	return fmt.Sprintf("%d", n)
}

// Update reports done of total bytes (or of the counter's unit); it ignores an unknown (non-positive)
// total and any call after the operation was shown finished.
func (p *Bar) Update(done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if total <= 0 || p.finished {
		return
	}
	pct := int(done * 100 / total)
	if p.tty {
		if pct == p.lastPct {
			return
		}
		p.lastPct = pct
		const width = 30
		fill := pct * width / 100
		fmt.Fprintf(p.w, "\r%s [%s%s] %3d%% %s/%s", p.label, strings.Repeat("#", fill), strings.Repeat(" ", width-fill), pct, p.amount(done), p.amount(total)+p.suffix())
		if done >= total {
			fmt.Fprintln(p.w)
			p.finished = true
		}
		return
	}
	if ten := pct / 10; ten != p.lastTen {
		p.lastTen = ten
		fmt.Fprintf(p.w, "%s: %d%% (%s of %s%s)\n", p.label, pct, p.amount(done), p.amount(total), p.suffix())
		p.finished = done >= total
	}
}

func (p *Bar) suffix() string {
	if p.unit == "" {
		return ""
	}
	return " " + p.unit
}

// Size spells n bytes for people: "512 B", "1.5 KiB", "2.0 MiB", "1.1 GiB".
func Size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
