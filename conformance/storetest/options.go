package storetest

import (
	"fmt"
	"slices"
	"time"
)

// DefaultLargeObjectSize is the size of the large-object case: bigger than
// any single-request limit an SDK might silently split at, so multipart
// uploads and chunked reads are exercised.
const DefaultLargeObjectSize = 64 << 20

// DefaultStreamObjectSize is the body of the streaming cases: more than
// the 16 MiB from which adapters upload in parts, and not a multiple of any
// part size, so a streamed put of unknown size crosses a part boundary and
// ends in a short part.
const DefaultStreamObjectSize = 17<<20 + 4099

// Defaults of the contention cases.
const (
	DefaultContenders = 16
	DefaultRounds     = 10
)

// DefaultCaseTimeout bounds each case in RunReport, so a hung bucket cannot
// stall a report forever.
const DefaultCaseTimeout = 10 * time.Minute

// Option changes how the suite runs. Every deviation from the defaults is
// listed in Report.Notes.
type Option func(*config)

type config struct {
	largeSize   int
	streamSize  int
	contenders  int
	rounds      int
	caseTimeout time.Duration
	skip        map[string]string // case name -> reason
	only        map[string]bool
	progress    func(caseName, message string)
}

func newConfig(opts []Option) *config {
	c := &config{
		largeSize:   DefaultLargeObjectSize,
		streamSize:  DefaultStreamObjectSize,
		contenders:  DefaultContenders,
		rounds:      DefaultRounds,
		caseTimeout: DefaultCaseTimeout,
		skip:        map[string]string{},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// LargeObjectSize sets the size of the large-object case. Lowering it below
// DefaultLargeObjectSize weakens the suite and is reported.
func LargeObjectSize(bytes int) Option {
	return func(c *config) {
		if bytes > 0 {
			c.largeSize = bytes
		}
	}
}

// StreamObjectSize sets the body size of the streaming cases. Lowering it
// below DefaultStreamObjectSize weakens the suite (a body under the part
// size never exercises a multipart upload) and is reported.
func StreamObjectSize(bytes int) Option {
	return func(c *config) {
		if bytes > 0 {
			c.streamSize = bytes
		}
	}
}

// Contention sets how many goroutines race in each round of the contention
// cases, and how many rounds they run (at least 2 and 1).
func Contention(goroutines, rounds int) Option {
	return func(c *config) {
		c.contenders = max(goroutines, 2)
		c.rounds = max(rounds, 1)
	}
}

// Quick skips the slow cases: the large object and the contention cases.
// They are reported as skipped, so the report is not complete.
func Quick() Option {
	return func(c *config) {
		for _, tc := range allCases {
			if tc.slow {
				c.skip[tc.name] = "skipped by the quick option"
			}
		}
	}
}

// Skip skips the named cases (reported as skipped).
func Skip(names ...string) Option {
	return func(c *config) {
		for _, n := range names {
			c.skip[n] = "skipped by option"
		}
	}
}

// Only runs just the named cases; the others are reported as skipped.
func Only(names ...string) Option {
	return func(c *config) {
		c.only = map[string]bool{}
		for _, n := range names {
			c.only[n] = true
		}
	}
}

// Progress receives progress messages from long cases, such as the size
// and speed of the large-object transfer.
func Progress(f func(caseName, message string)) Option {
	return func(c *config) { c.progress = f }
}

// CaseTimeout bounds each case in RunReport (default DefaultCaseTimeout).
func CaseTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.caseTimeout = d
		}
	}
}

// skipReason says why a case does not run, or "" if it runs.
func (c *config) skipReason(name string) string {
	if c.only != nil && !c.only[name] {
		return "not selected"
	}
	return c.skip[name]
}

// notes lists the ways this configuration weakens the suite.
func (c *config) notes() []string {
	var n []string
	if c.largeSize < DefaultLargeObjectSize {
		n = append(n, fmt.Sprintf("large-object lowered to %s (default %s)", sizeString(c.largeSize), sizeString(DefaultLargeObjectSize)))
	}
	if c.streamSize < DefaultStreamObjectSize {
		n = append(n, fmt.Sprintf("streamed bodies lowered to %s (default %s)", sizeString(c.streamSize), sizeString(DefaultStreamObjectSize)))
	}
	if c.contenders < DefaultContenders || c.rounds < DefaultRounds {
		n = append(n, fmt.Sprintf("contention lowered to %d goroutines x %d rounds (default %d x %d)", c.contenders, c.rounds, DefaultContenders, DefaultRounds))
	}
	for _, name := range unknownNames(c) {
		n = append(n, fmt.Sprintf("option names unknown case %q", name))
	}
	return n
}

func unknownNames(c *config) []string {
	known := map[string]bool{}
	for _, tc := range allCases {
		known[tc.name] = true
	}
	var out []string
	for n := range c.skip {
		if !known[n] {
			out = append(out, n)
		}
	}
	for n := range c.only {
		if !known[n] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func sizeString(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
