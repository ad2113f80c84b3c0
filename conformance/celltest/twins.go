package celltest

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
)

// Negative twins: variants of the system under test that break one
// guarantee the way real drivers and logs get it wrong. RunTwins shows the
// suite rejects each in the cases it names.

// Twin is one deliberately broken variant.
type Twin struct {
	// Name says what is broken.
	Name string
	// Wrap builds the broken harness around the one under test.
	Wrap func(Harness) Harness
	// CaughtBy are the cases that must each fail on the twin.
	CaughtBy []string
}

// Twins lists every shipped twin.
func Twins() []Twin {
	return []Twin{
		{"commit-per-statement", wrapDriver(CommitPerStatement), []string{"turn/atomic-crash", "turn/atomic-panic"}},
		{"ack-before-durable", wrapLog(AckBeforeDurable), []string{"output/held-until-durable", "output/counter-64", "wake/publish-per-commit"}},
		{"swallow-durability-errors", wrapLog(SwallowDurabilityErrors), []string{"reset/durability-failure"}},
		{"no-authorizer", wrapDriver(NoAuthorizer), []string{"sql/authorizer", "sql/reserved-rename"}},
		{"no-savepoint-rollback", wrapDriver(NoSavepointRollback), []string{"sql/savepoints"}},
		{"no-wake-triggers", wrapDriver(NoWakeTriggers), []string{"wake/schema", "wake/sequence", "wake/epoch",
			"wake/legacy-seed", "wake/publish-per-commit", "wake/runtime-wake"}},
		{"publication-acked-early", wrapWake(AckPublicationEarly), []string{"wake/reply-waits-for-publication"}},
		{"publication-errors-swallowed", wrapWake(SwallowPublicationErrors), []string{"wake/publication-failure-resets"}},
		{"no-announcement", wrapWake(DropAnnouncements), []string{"wake/announce"}},
		{"set-alarm-keeps-retries", wrapDriver(SetAlarmKeepsRetries), []string{"alarm/set-resets-retries"}},
		{"no-block-concurrency-limit", configure(NoBlockConcurrencyLimit), []string{"reset/block-concurrency-timeout"}},
	}
}

func wrapWake(w func(cell.WakePublisher) cell.WakePublisher) func(Harness) Harness {
	return func(h Harness) Harness {
		prev := h.WrapWake
		h.WrapWake = func(p cell.WakePublisher) cell.WakePublisher {
			if prev != nil {
				p = prev(p)
			}
			return w(p)
		}
		return h
	}
}

func configure(edit func(*cell.Options)) func(Harness) Harness {
	return func(h Harness) Harness {
		prev := h.Configure
		h.Configure = func(o *cell.Options) {
			if prev != nil {
				prev(o)
			}
			edit(o)
		}
		return h
	}
}

func wrapDriver(w func(driver.Driver) driver.Driver) func(Harness) Harness {
	return func(h Harness) Harness {
		h.Driver = w(h.Driver)
		return h
	}
}

func wrapLog(w func(durability.Log) durability.Log) func(Harness) Harness {
	return func(h Harness) Harness {
		prev := h.WrapLog
		h.WrapLog = func(l durability.Log) durability.Log {
			if prev != nil {
				l = prev(l)
			}
			return w(l)
		}
		return h
	}
}

// RunTwins runs each twin's catching cases and fails t unless every one of
// them fails on the twin.
func RunTwins(t *testing.T, h Harness) {
	t.Helper()
	for _, tw := range Twins() {
		t.Run(tw.Name, func(t *testing.T) {
			th := tw.Wrap(h)
			th.Cases = tw.CaughtBy
			if th.Dir == "" {
				th.Dir = t.TempDir()
			}
			rep, err := RunReport(t.Context(), th)
			if err != nil {
				t.Fatal(err)
			}
			failed := rep.Failed()
			for _, name := range tw.CaughtBy {
				if !slices.Contains(failed, name) {
					t.Errorf("twin %s passed case %s, which must reject it", tw.Name, name)
				}
			}
			t.Logf("twin %s rejected by: %s", tw.Name, strings.Join(failed, ", "))
		})
	}
}

// twinDriver wraps a driver, changing its connections with edit. It never
// declares page capture, so the runtime takes the image path.
type twinDriver struct {
	driver.Driver
	edit func(*twinConn)
}

func (d twinDriver) Capabilities() driver.Capabilities {
	caps := d.Driver.Capabilities()
	caps.PageCapture = false
	return caps
}

func (d twinDriver) Open(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	cfg.PageCapture = false
	c, err := d.Driver.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	tc := &twinConn{Conn: c}
	d.edit(tc)
	return tc, nil
}

type twinConn struct {
	driver.Conn
	noTx       bool
	noAuth     bool
	noRollback bool
	noTriggers bool
	keepRetry  bool
}

func (c *twinConn) Begin(ctx context.Context) error {
	if c.noTx {
		return nil
	}
	return c.Conn.Begin(ctx)
}

func (c *twinConn) Commit(ctx context.Context) error {
	if c.noTx {
		return nil
	}
	return c.Conn.Commit(ctx)
}

func (c *twinConn) Rollback(ctx context.Context) error {
	if c.noTx {
		return nil
	}
	return c.Conn.Rollback(ctx)
}

func (c *twinConn) SetAuthorizer(fn driver.Authorizer) error {
	if c.noAuth {
		return nil
	}
	return c.Conn.SetAuthorizer(fn)
}

func (c *twinConn) Exec(ctx context.Context, sql string, args ...any) (driver.Result, error) {
	if c.noRollback && strings.Contains(strings.ToUpper(sql), "ROLLBACK TO") {
		return driver.Result{}, nil
	}
	if c.noTriggers {
		sql = createTrigger.ReplaceAllString(sql, "")
	}
	if c.keepRetry {
		sql = alarmCounterReset.ReplaceAllString(sql, "")
	}
	return c.Conn.Exec(ctx, sql, args...)
}

// createTrigger matches one CREATE TRIGGER statement (bodies here hold no
// nested END).
var createTrigger = regexp.MustCompile(`(?is)CREATE\s+TRIGGER\b.*?\bEND\s*;?`)

// alarmCounterReset matches the counter reset in the runtime's alarm
// upsert (ON CONFLICT ... DO UPDATE SET ..., retry = 0, counted_retry = 0).
var alarmCounterReset = regexp.MustCompile(`(?i)\bretry\s*=\s*0\s*,\s*counted_retry\s*=\s*0\s*,`)

// CommitPerStatement ignores Begin, Commit and Rollback, so every
// statement commits on its own: a turn is no longer atomic.
func CommitPerStatement(d driver.Driver) driver.Driver {
	return twinDriver{d, func(c *twinConn) { c.noTx = true }}
}

// NoAuthorizer accepts SetAuthorizer and installs nothing.
func NoAuthorizer(d driver.Driver) driver.Driver {
	return twinDriver{d, func(c *twinConn) { c.noAuth = true }}
}

// NoSavepointRollback drops ROLLBACK TO statements, so a failed nested
// transaction keeps its writes.
func NoSavepointRollback(d driver.Driver) driver.Driver {
	return twinDriver{d, func(c *twinConn) { c.noRollback = true }}
}

// NoWakeTriggers silently drops CREATE TRIGGER statements, so _cf_WAKE
// never follows _cf_ALARM: its sequence never moves and nothing is
// published.
func NoWakeTriggers(d driver.Driver) driver.Driver {
	return twinDriver{d, func(c *twinConn) { c.noTriggers = true }}
}

// SetAlarmKeepsRetries drops the counter reset from the statement that
// arms an alarm over an existing one: a new SetAlarm inherits the failed
// alarm's retry counters.
func SetAlarmKeepsRetries(d driver.Driver) driver.Driver {
	return twinDriver{d, func(c *twinConn) { c.keepRetry = true }}
}

// NoBlockConcurrencyLimit runs BlockConcurrencyWhile without a time
// limit, so a hung callback wedges the object for good.
func NoBlockConcurrencyLimit(o *cell.Options) { o.BlockConcurrencyTimeout = -1 }

// AckPublicationEarly reports every wake publication done as soon as it
// is started, whatever the publisher does.
func AckPublicationEarly(p cell.WakePublisher) cell.WakePublisher {
	return twinPublisher{p, func(d durability.Durable) durability.Durable { return durability.Resolved(nil) }}
}

// SwallowPublicationErrors reports failed wake publications as done.
func SwallowPublicationErrors(p cell.WakePublisher) cell.WakePublisher {
	return twinPublisher{p, func(d durability.Durable) durability.Durable {
		f := durability.NewFuture()
		go func() {
			<-d.Done()
			f.Resolve(nil)
		}()
		return f
	}}
}

// DropAnnouncements never publishes the installation a cell announces
// after opening under a new epoch: a runtime that publishes only alarm
// changes, so a dead owner's entries and migration seeds are never retired.
func DropAnnouncements(p cell.WakePublisher) cell.WakePublisher {
	return dropAnnouncements{p}
}

type dropAnnouncements struct{ cell.WakePublisher }

func (d dropAnnouncements) Publish(p cell.WakePublication, committed durability.Durable) durability.Durable {
	if p.Announce {
		return durability.Resolved(nil)
	}
	return d.WakePublisher.Publish(p, committed)
}

type twinPublisher struct {
	cell.WakePublisher
	edit func(durability.Durable) durability.Durable
}

func (t twinPublisher) Publish(p cell.WakePublication, committed durability.Durable) durability.Durable {
	return t.edit(t.WakePublisher.Publish(p, committed))
}

// AckBeforeDurable reports every commit durable as soon as it is appended,
// whatever the wrapped log does.
func AckBeforeDurable(l durability.Log) durability.Log {
	return twinLog{l, func(d durability.Durable) durability.Durable { return durability.Resolved(nil) }}
}

// SwallowDurabilityErrors reports failed commits as durable.
func SwallowDurabilityErrors(l durability.Log) durability.Log {
	return twinLog{l, func(d durability.Durable) durability.Durable {
		f := durability.NewFuture()
		go func() {
			<-d.Done()
			f.Resolve(nil)
		}()
		return f
	}}
}

type twinLog struct {
	durability.Log
	edit func(durability.Durable) durability.Durable
}

func (l twinLog) Open(ctx context.Context, key string, epoch uint64, conn driver.Conn, restore bool) (durability.CellLog, error) {
	cl, err := l.Log.Open(ctx, key, epoch, conn, restore)
	if err != nil {
		return nil, err
	}
	return twinCellLog{cl, l.edit}, nil
}

type twinCellLog struct {
	durability.CellLog
	edit func(durability.Durable) durability.Durable
}

func (c twinCellLog) Append(cm durability.Commit) durability.Durable {
	return c.edit(c.CellLog.Append(cm))
}
