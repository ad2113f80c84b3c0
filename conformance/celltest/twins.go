package celltest

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/wakeport"
)

// Negative twins: variants of the system under test that break one
// guarantee the way real drivers and logs get it wrong. RunTwins shows the
// suite rejects each in the cases it names.

// twinDef is one deliberately broken variant.
type twinDef struct {
	// Name says what is broken.
	Name string
	// Wrap builds the broken harness around the one under test.
	Wrap func(Harness) Harness
	// CaughtBy are the cases that must each fail on the twin.
	CaughtBy []string
}

// Twins lists every shipped twin: each wraps the harness (its driver, its
// log, its wake publisher or its runtime options) to break one guarantee.
func Twins() []suite.Twin[Harness] {
	var out []suite.Twin[Harness]
	for _, tw := range twinDefs() {
		out = append(out, suite.Twin[Harness]{Name: tw.Name, Wrap: tw.Wrap, CaughtBy: tw.CaughtBy})
	}
	return out
}

func twinDefs() []twinDef {
	return []twinDef{
		{"commit-per-statement", wrapDriver(CommitPerStatement), []string{"turn/atomic-crash", "turn/atomic-panic"}},
		{"ack-before-durable", wrapLog(AckBeforeDurable), []string{"output/held-until-durable", "output/counter-64", "wake/publish-per-commit", "commit/synchronous-log",
			"websocket/send-held-until-durable", "output/outgoing-held-until-durable", "output/outgoing-allow-unconfirmed", "output/streamed-response"}},
		{"swallow-durability-errors", wrapLog(SwallowDurabilityErrors), []string{"reset/durability-failure", "commit/synchronous-log", "websocket/failed-commit-closes-1011",
			"output/outgoing-not-made-on-failure", "output/streamed-chunk-not-sent-on-failure"}},
		{"no-authorizer", wrapDriver(NoAuthorizer), []string{"sql/authorizer", "sql/reserved-rename"}},
		{"no-savepoint-rollback", wrapDriver(NoSavepointRollback), []string{"sql/savepoints"}},
		{"no-wake-triggers", wrapDriver(NoWakeTriggers), []string{"wake/schema", "wake/sequence", "wake/epoch",
			"wake/legacy-seed", "wake/publish-per-commit", "wake/runtime-wake"}},
		{"publication-acked-early", wrapWake(AckPublicationEarly), []string{"wake/reply-waits-for-publication"}},
		{"publication-errors-swallowed", wrapWake(SwallowPublicationErrors), []string{"wake/publication-failure-resets"}},
		{"no-announcement", wrapWake(DropAnnouncements), []string{"wake/announce"}},
		{"database-kept-elsewhere", wrapDriver(KeepDatabaseElsewhere), append(bucketCaseNames("empty-bucket-starts-empty"), "alarm/survives-restart", "alarm/learn-after-takeover")},
		{"restore-ignored", wrapLog(IgnoreRestore), bucketCaseNames("bucket-replaces-local")},
		{"every-page-every-commit", wrapLog(UploadEveryPage), []string{"bucket/ltx/delta-pages"}},
		{"capture-misreported", wrapLog(MisreportCapture), []string{"output/log-told-capture"}},
		{"bookmark-any-time", wrapLog(BookmarkAnyTime), []string{"storage/bookmarks"}},
		{"stale-bookmark", wrapLog(StaleBookmark), []string{"storage/bookmarks"}},
		{"restore-request-ignored", wrapLog(IgnoreRestoreRequest), []string{"storage/restore-bookmark", "storage/restore-bookmark-fleet", "storage/restore-bookmark-nodelog", "storage/restore-bookmark-errors"}},
		{"restore-epoch-blind", wrapLog(EpochBlindRestore), []string{"storage/restore-bookmark-epoch"}},
		{"restore-request-dropped-at-open", wrapLog(DropRestoreRequestAtOpen), []string{"storage/restore-bookmark-crash"}},
		{"fork-ignores-bookmark", wrapLog(ForkIgnoresBookmark), []string{"storage/fork"}},
		{"set-alarm-keeps-retries", wrapDriver(SetAlarmKeepsRetries), []string{"alarm/set-resets-retries"}},
		{"no-block-concurrency-limit", configure(NoBlockConcurrencyLimit), []string{"reset/block-concurrency-timeout"}},
		{"no-alarm-residency", configure(NoAlarmResidency), []string{"alarm/residency"}},
		{"short-timers", configure(ShortTimers), []string{"alarm/internal-backoff", "alarm/timeline"}},
		{"clock-ahead", configure(ClockAhead), []string{"alarm/stored-row-decides"}},
		{"lease-never-fences", configure(LeaseNeverFences), []string{"commit/lease-checked-before-ack", "commit/ack-checked-when-already-durable"}},
		{"rollback-commits", wrapDriver(RollbackCommits), []string{"alarm/panic"}},
		{"uncounted-changes", wrapDriver(UncountedChanges), []string{"commit/no-capture", "output/log-commits"}},
		{"never-evict-idle", configure(NeverEvictIdle), []string{"lifecycle/idle-eviction", "websocket/hibernation", "websocket/attachment"}},
		{"keep-idle-connections", configure(KeepIdleConnections), []string{"lifecycle/idle-connection-released"}},
		{"lease-never-lost", configure(LeaseNeverLost), []string{"reset/lease-lost", "lifecycle/reset-while-yielded"}},
		{"close-always-final", wrapLog(CloseAlwaysFinal), []string{"lifecycle/log-close-final"}},
		{"no-rows-affected", wrapDriver(NoRowsAffected), []string{"sql/exec-query-scan", "kv/basic"}},
		// The storage API (issue 23), each on the twin that breaks it.
		{"delete-all-per-statement", wrapDriver(CommitPerStatement), []string{"storage/delete-all", "storage/abort"}},
		{"sync-before-durable", wrapLog(AckBeforeDurable), []string{"storage/sync"}},
		{"first-row-only", wrapDriver(FirstRowOnly), []string{"storage/cursors"}},
		{"transaction-keeps-writes", wrapDriver(NoSavepointRollback), []string{"storage/transaction"}},
		{"no-limits", configure(NoLimits), []string{"storage/limits"}},
		{"text-as-blob", wrapDriver(TextAsBlob), []string{"sql/celld-schema"}},
		{"blob-as-text", wrapDriver(BlobAsText), []string{"kv/v8-values"}},
		{"sanitizes-utf8", wrapDriver(SanitizesUTF8), []string{"kv/list"}},
		// AckBeforeDurable again, for a typed method's reply (its own entry,
		// so the method cases are run on it alone).
		{"method-reply-before-durable", wrapLog(AckBeforeDurable), []string{"output/method-held-until-durable"}},
	}
}

// bucketCaseNames names one bucket case in every durability mode.
func bucketCaseNames(what string) []string {
	var names []string
	for _, m := range bucketModes() {
		names = append(names, "bucket/"+m.name+"/"+what)
	}
	return names
}

func wrapWake(w func(wakeport.Publisher) wakeport.Publisher) func(Harness) Harness {
	return func(h Harness) Harness {
		prev := h.WrapWake
		h.WrapWake = func(p wakeport.Publisher) wakeport.Publisher {
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

// RunTwins shows the suite rejects every twin on h (suite.RunTwins): it
// first runs the cases the twins name on h itself (one that fails there
// proves nothing when it fails on a twin, so that fails t too), then each
// twin's cases on the twin, as subtests "twin/<name>"; each must fail.
func RunTwins(t *testing.T, h Harness, opts ...suite.Option) {
	t.Helper()
	if h.Dir == "" {
		h.Dir = t.TempDir()
	}
	suite.RunTwins(t, h, Twins(), RunReport, opts...)
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
	// rollbackCommits: Rollback commits (RollbackCommits).
	rollbackCommits bool
	// noChanges: total_changes() reads 0 (UncountedChanges).
	noChanges bool
	// noRowsAffected: Exec reports no row changed (NoRowsAffected).
	noRowsAffected bool
	// textAsBlob: string arguments bound as blobs (TextAsBlob).
	textAsBlob bool
	// blobAsText: blob columns read as strings (BlobAsText).
	blobAsText bool
	// validUTF8: string arguments made valid UTF-8 (SanitizesUTF8).
	validUTF8 bool
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
	if c.rollbackCommits {
		return c.Conn.Commit(ctx)
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
	if c.textAsBlob {
		args = blobArgs(args)
	}
	if c.validUTF8 {
		args = validUTF8Args(args)
	}
	res, err := c.Conn.Exec(ctx, sql, args...)
	if c.noRowsAffected {
		res.RowsAffected = 0
	}
	return res, err
}

// blobArgs returns args with every string made a []byte.
func blobArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if s, ok := a.(string); ok {
			a = []byte(s)
		}
		out[i] = a
	}
	return out
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
func AckPublicationEarly(p wakeport.Publisher) wakeport.Publisher {
	return twinPublisher{p, func(d durability.Durable) durability.Durable { return durability.Resolved(nil) }}
}

// SwallowPublicationErrors reports failed wake publications as done.
func SwallowPublicationErrors(p wakeport.Publisher) wakeport.Publisher {
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
func DropAnnouncements(p wakeport.Publisher) wakeport.Publisher {
	return dropAnnouncements{p}
}

type dropAnnouncements struct{ wakeport.Publisher }

func (d dropAnnouncements) Publish(p wakeport.Publication, committed durability.Durable) durability.Durable {
	if p.Announce {
		return durability.Resolved(nil)
	}
	return d.Publisher.Publish(p, committed)
}

type twinPublisher struct {
	wakeport.Publisher
	edit func(durability.Durable) durability.Durable
}

func (t twinPublisher) Publish(p wakeport.Publication, committed durability.Durable) durability.Durable {
	return t.edit(t.Publisher.Publish(p, committed))
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

func (l twinLog) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	cl, err := l.Log.Open(ctx, req)
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

// KeepDatabaseElsewhere keeps each database in a file next to the one
// Config.Path names (as a pool of files the runtime does not manage would,
// such as a browser's OPFS pool): the runtime's discarding of the local
// file at a bucket-wins activation misses it, so stale local state
// survives. Connections are otherwise the driver's own.
func KeepDatabaseElsewhere(d driver.Driver) driver.Driver { return elsewhereDriver{d} }

type elsewhereDriver struct{ driver.Driver }

func (d elsewhereDriver) Open(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	if cfg.Path != "" {
		cfg.Path += ".kept"
	}
	return d.Driver.Open(ctx, cfg)
}

// IgnoreRestore opens every cell log as if the runtime had not asked for
// a restore: a log that leaves the bucket's state in the bucket.
func IgnoreRestore(l durability.Log) durability.Log { return ignoreRestore{l} }

type ignoreRestore struct{ durability.Log }

func (l ignoreRestore) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	req.Restore = false
	return l.Log.Open(ctx, req)
}

// MisreportCapture opens every cell log with PagesCaptured flipped: a
// runtime whose request says the opposite of what it hands the log (a
// log trusting it lays pages it was told would not come, or waits for
// pages that never do).
func MisreportCapture(l durability.Log) durability.Log { return misreportCapture{l} }

type misreportCapture struct{ durability.Log }

func (l misreportCapture) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	req.PagesCaptured = !req.PagesCaptured
	return l.Log.Open(ctx, req)
}

// UploadEveryPage hands the log every page of the database with each
// commit, as if each had changed them all: a log (or a driver's capture)
// that never diffs, so every file is as large as a snapshot.
func UploadEveryPage(l durability.Log) durability.Log { return everyPage{l} }

type everyPage struct{ durability.Log }

func (l everyPage) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	cl, err := l.Log.Open(ctx, req)
	if err != nil {
		return nil, err
	}
	return everyPageCellLog{cl, req.Conn}, nil
}

type everyPageCellLog struct {
	durability.CellLog
	conn driver.Conn
}

func (c everyPageCellLog) Append(cm durability.Commit) durability.Durable {
	if cm.Pages != nil {
		cm.Pages.Release()
	}
	ctx := context.Background()
	img, err := c.conn.Serialize(ctx)
	if err != nil {
		return durability.Resolved(err)
	}
	size, err := c.conn.PageSize(ctx)
	if err != nil {
		return durability.Resolved(err)
	}
	all := &driver.CapturedCommit{PageSize: size, PageCount: uint32(len(img) / size)}
	for off := 0; off+size <= len(img); off += size {
		all.Pages = append(all.Pages, driver.Page{Pgno: uint32(off/size) + 1, Data: img[off : off+size]})
	}
	return c.CellLog.Append(durability.Commit{Seq: cm.Seq, Pages: all})
}

// CloseAlwaysFinal closes every cell log with final=true: a runtime that
// tells its log an eviction that models a crash (EvictAll) was orderly, so
// a log may drop what it keeps for recovery.
func CloseAlwaysFinal(l durability.Log) durability.Log { return alwaysFinal{l} }

type alwaysFinal struct{ durability.Log }

func (l alwaysFinal) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	cl, err := l.Log.Open(ctx, req)
	if err != nil {
		return nil, err
	}
	return alwaysFinalCellLog{cl}, nil
}

type alwaysFinalCellLog struct{ durability.CellLog }

func (c alwaysFinalCellLog) Close(ctx context.Context, final bool) error {
	return c.CellLog.Close(ctx, true)
}
