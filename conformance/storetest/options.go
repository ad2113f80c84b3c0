package storetest

import (
	"fmt"
	"time"

	"github.com/cellb/cellb/conformance/suite"
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

// DefaultCaseTimeout bounds each case in RunReport unless suite.CaseTimeout
// says otherwise, so a hung bucket cannot stall a report forever.
const DefaultCaseTimeout = 10 * time.Minute

// config is one run's settings: the common options (suite.Config) and
// storetest's own, given as suite.Custom values by the functions below.
// Every deviation from the defaults is listed in Report.Notes.
type config struct {
	*suite.Config
	largeSize  int
	streamSize int
	contenders int
	rounds     int
}

// Storetest's own settings, carried by suite.Custom.
type (
	largeObjectSize  int
	streamObjectSize int
	contention       struct{ goroutines, rounds int }
)

func newConfig(opts []suite.Option) *config {
	c := &config{
		Config:     suite.NewConfig(opts),
		largeSize:  DefaultLargeObjectSize,
		streamSize: DefaultStreamObjectSize,
		contenders: DefaultContenders,
		rounds:     DefaultRounds,
	}
	for _, v := range c.Custom() {
		switch v := v.(type) {
		case largeObjectSize:
			c.largeSize = int(v)
		case streamObjectSize:
			c.streamSize = int(v)
		case contention:
			c.contenders, c.rounds = v.goroutines, v.rounds
		}
	}
	return c
}

// LargeObjectSize sets the size of the large-object case. Lowering it below
// DefaultLargeObjectSize weakens the suite and is reported.
func LargeObjectSize(bytes int) suite.Option {
	if bytes <= 0 {
		return nil
	}
	return suite.Custom(largeObjectSize(bytes))
}

// StreamObjectSize sets the body size of the streaming cases. Lowering it
// below DefaultStreamObjectSize weakens the suite (a body under the part
// size never exercises a multipart upload) and is reported.
func StreamObjectSize(bytes int) suite.Option {
	if bytes <= 0 {
		return nil
	}
	return suite.Custom(streamObjectSize(bytes))
}

// Contention sets how many goroutines race in each round of the contention
// cases, and how many rounds they run (at least 2 and 1).
func Contention(goroutines, rounds int) suite.Option {
	return suite.Custom(contention{max(goroutines, 2), max(rounds, 1)})
}

// notes lists the ways this configuration weakens the suite, and the
// options naming no case.
func (c *config) notes() []string { return append(c.weakening(), c.Notes(suiteCases())...) }

// weakening lists the ways this configuration weakens the suite.
func (c *config) weakening() []string {
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
	return n
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
