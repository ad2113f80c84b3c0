package suite

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Option changes how a suite runs. The common ones are below; a suite's
// own (storetest.LargeObjectSize, drivertest.Seed) are Custom options that
// only that suite reads. A suite reports, in Report.Notes, every option
// naming a case it does not have.
type Option func(*Config)

// Config is the options of one run, as a suite reads them.
type Config struct {
	only        []string
	skip        []skipEntry
	quick       bool
	caseTimeout time.Duration
	progress    func(caseName, message string)
	custom      []any
}

type skipEntry struct{ name, reason string }

// NewConfig applies opts in order.
func NewConfig(opts []Option) *Config {
	c := &Config{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// Only runs just the named cases: an entry selects the case of that exact
// name, or every case under it when it ends in "/" (e.g. "capture/").
// Several Only options add up. Run leaves the other cases out; RunReport
// lists them as skipped, "not selected".
func Only(names ...string) Option {
	return func(c *Config) { c.only = append(c.only, names...) }
}

// Skip skips the named cases (entries as Only's), reported as skipped.
func Skip(names ...string) Option {
	return func(c *Config) {
		for _, n := range names {
			c.skip = append(c.skip, skipEntry{n, "skipped by option"})
		}
	}
}

// Quick skips the suite's slow cases (Case.Slow: storetest's large object
// and contention cases), reported as skipped, so the run is not complete.
// A suite without slow cases runs them all.
func Quick() Option { return func(c *Config) { c.quick = true } }

// QuickReason is the reason of a case Quick skipped.
const QuickReason = "skipped by the quick option"

// CaseTimeout bounds each case: a case still running after d fails with
// "did not finish within d". Without it, Run sets no limit of its own (go
// test's -timeout bounds it) and RunReport uses the suite's default (none,
// except storetest's 10 minutes).
func CaseTimeout(d time.Duration) Option {
	return func(c *Config) {
		if d > 0 {
			c.caseTimeout = d
		}
	}
}

// Progress receives progress messages: "running" and "<status> in
// <time>" for each case RunReport runs, and whatever long cases report
// (storetest's large-object transfer). It may be called from several
// goroutines at once.
func Progress(f func(caseName, message string)) Option {
	return func(c *Config) { c.progress = f }
}

// Custom carries a setting of one suite (a value of a type that suite
// defines); the suite reads it back with Config.Custom and others ignore
// it.
func Custom(v any) Option { return func(c *Config) { c.custom = append(c.custom, v) } }

// Case is one case as the runner sees it.
type Case struct {
	Name    string
	Summary string // what the case checks
	Slow    bool   // skipped by Quick
}

// Selects reports whether a case filter admits name: an empty filter
// admits every case; an entry selects the case of that exact name, or
// every case under it when it ends in "/" (e.g. "capture/").
func Selects(filter []string, name string) bool {
	if len(filter) == 0 {
		return true
	}
	return slices.ContainsFunc(filter, func(f string) bool { return matches(f, name) })
}

func matches(entry, name string) bool {
	return entry == name || (strings.HasSuffix(entry, "/") && strings.HasPrefix(name, entry))
}

// Selected reports whether Only admits the case.
func (c *Config) Selected(name string) bool { return Selects(c.only, name) }

// SkipReason says why cs does not run ("not selected", a Skip, Quick), or
// "" when it runs.
func (c *Config) SkipReason(cs Case) string {
	if !c.Selected(cs.Name) {
		return "not selected"
	}
	for _, s := range c.skip {
		if matches(s.name, cs.Name) {
			return s.reason
		}
	}
	if c.quick && cs.Slow {
		return QuickReason
	}
	return ""
}

// IsQuick reports whether Quick was given.
func (c *Config) IsQuick() bool { return c.quick }

// CaseTimeout is the CaseTimeout option's value, or def when none was
// given.
func (c *Config) CaseTimeout(def time.Duration) time.Duration {
	if c.caseTimeout > 0 {
		return c.caseTimeout
	}
	return def
}

// Progressf sends a progress message about a case, if Progress was given.
func (c *Config) Progressf(caseName, format string, args ...any) {
	if c.progress != nil {
		c.progress(caseName, fmt.Sprintf(format, args...))
	}
}

// Custom lists the Custom options' values, in order.
func (c *Config) Custom() []any { return slices.Clone(c.custom) }

// Notes lists the Only and Skip entries that name none of cases, as notes
// for Report.Notes (option names unknown case "x").
func (c *Config) Notes(cases []Case) []string {
	var unknown []string
	entries := slices.Clone(c.only)
	for _, s := range c.skip {
		entries = append(entries, s.name)
	}
	for _, e := range entries {
		if !slices.ContainsFunc(cases, func(cs Case) bool { return matches(e, cs.Name) }) && !slices.Contains(unknown, e) {
			unknown = append(unknown, e)
		}
	}
	slices.Sort(unknown)
	var out []string
	for _, n := range unknown {
		out = append(out, fmt.Sprintf("option names unknown case %q", n))
	}
	return out
}
