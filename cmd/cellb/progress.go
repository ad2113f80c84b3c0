package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// progressBar shows how far a long operation got: a redrawn bar on a
// terminal, and a line at every tenth otherwise (logs, pipes).
type progressBar struct {
	w     io.Writer
	label string
	tty   bool

	mu       sync.Mutex
	lastPct  int
	lastTen  int
	finished bool
}

func newProgressBar(w io.Writer, label string) *progressBar {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progressBar{w: w, label: label, tty: tty, lastPct: -1, lastTen: -1}
}

// update reports done of total bytes.
func (p *progressBar) update(done, total int64) {
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
		fmt.Fprintf(p.w, "\r%s [%s%s] %3d%% %s/%s", p.label, strings.Repeat("#", fill), strings.Repeat(" ", width-fill), pct, size(done), size(total))
		if done >= total {
			fmt.Fprintln(p.w)
			p.finished = true
		}
		return
	}
	if ten := pct / 10; ten != p.lastTen {
		p.lastTen = ten
		fmt.Fprintf(p.w, "%s: %d%% (%s of %s)\n", p.label, pct, size(done), size(total))
		p.finished = done >= total
	}
}

func size(n int64) string {
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
