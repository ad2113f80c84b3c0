package drivertest

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/driver"
)

// CaseNames lists every case of the suite, in run order.
func CaseNames() []string { return caseNames(allCases()) }

func caseNames(cases []caseDef) []string {
	names := make([]string, 0, len(cases))
	for _, c := range cases {
		names = append(names, c.name)
	}
	return names
}

// Run runs the suite as subtests of t (one per case, named like
// "capture/workload", so -run selects them) and fails t for every broken
// claim; a failed case's log says the seed to replay it with.
func Run(t *testing.T, h Harness, opts ...suite.Option) {
	t.Helper()
	h, err := h.resolved()
	if err != nil {
		t.Fatal(err)
	}
	if h.Dir == "" {
		h.Dir = t.TempDir()
	}
	t.Logf("drivertest %s: seed %d (replay with %s=%d)", h.Driver.Name(), h.Seed, SeedEnv, h.Seed)
	cases := allCases()
	cfg := suite.NewConfig(opts)
	lim := suite.LimitsFor(cfg, 0)
	suite.Subtests(t, suiteCases(cases), cfg, func(ctx context.Context, c suite.Case) suite.Outcome {
		return runCase(ctx, h, caseNamed(cases, c.Name), lim)
	}, func(t *testing.T, o suite.Outcome) {
		if o.Failed() {
			t.Logf("seed %d: replay with %s=%d", h.Seed, SeedEnv, h.Seed)
		}
	})
}

// RunReport runs the suite without a testing.T and returns what each case
// found, with the driver's name (Report.Subject) and the seed
// (Report.Seed, to replay with SeedEnv). It is how the negative twins are
// shown to be rejected; a third-party tool can also use it to print a
// conformance report. It fails on a malformed harness, and with ctx's
// error when ctx ends before every case ran (those not run are skipped).
func RunReport(ctx context.Context, h Harness, opts ...suite.Option) (suite.Report, error) {
	rep := suite.Report{Suite: "drivertest"}
	h, err := h.resolved()
	if err != nil {
		rep.SetupError = err.Error()
		return rep, err
	}
	rep.Subject, rep.Seed = h.Driver.Name(), h.Seed
	if h.Dir == "" {
		dir, err := os.MkdirTemp("", "drivertest-")
		if err != nil {
			rep.SetupError = err.Error()
			return rep, err
		}
		defer os.RemoveAll(dir)
		h.Dir = dir
	}
	cases := allCases()
	cfg := suite.NewConfig(opts)
	rep.Notes = cfg.Notes(suiteCases(cases))
	lim := suite.LimitsFor(cfg, 0)
	rep.Cases, err = suite.Collect(ctx, suiteCases(cases), cfg, func(ctx context.Context, c suite.Case) suite.Outcome {
		return runCase(ctx, h, caseNamed(cases, c.Name), lim)
	})
	return rep, err
}

func suiteCases(cases []caseDef) []suite.Case {
	out := make([]suite.Case, len(cases))
	for i, c := range cases {
		out[i] = suite.Case{Name: c.name}
	}
	return out
}

func caseNamed(cases []caseDef, name string) caseDef {
	return cases[slices.IndexFunc(cases, func(d caseDef) bool { return d.name == name })]
}

// caseDef is one named check.
type caseDef struct {
	name string
	run  func(c *checkT)
}

// allCases is the suite in run order. It is built on each call so the
// package holds no mutable state.
func allCases() []caseDef {
	var all []caseDef
	all = append(all, sqlCases()...)
	all = append(all, counterCases()...)
	all = append(all, authCases()...)
	all = append(all, imageCases()...)
	all = append(all, captureCases()...)
	all = append(all, sessionCases()...)
	all = append(all, checkpointCases()...)
	return all
}

// runCase runs one case in its own directory (suite.RunCase: fatalf and
// skip end the case, a panic in the driver is a failure), closing every
// connection the case opened. A failed case's directory is kept.
func runCase(ctx context.Context, h Harness, def caseDef, lim suite.Limits) suite.Outcome {
	return suite.RunCase(ctx, lim, true, func(ctx context.Context, rec *suite.Recorder) {
		c := &checkT{ctx: ctx, h: h, caps: h.Driver.Capabilities(), rec: rec}
		c.rng = rand.New(rand.NewPCG(uint64(h.Seed), nameHash(def.name)))
		defer func() {
			if p := recover(); p != nil {
				// Recorded here, so the case counts as failed below.
				rec.Errorf("panic: %v\n%s", p, debug.Stack())
			}
			c.closeAll()
			if rec.Failed() {
				if c.dir != "" {
					rec.Logf("the case's databases are kept in %s", c.dir)
				}
			} else if c.dir != "" {
				os.RemoveAll(c.dir)
			}
		}()
		dir, err := os.MkdirTemp(h.Dir, strings.ReplaceAll(def.name, "/", "-")+"-")
		if err != nil {
			c.fatalf("cannot create the case directory: %v", err)
		}
		c.dir = dir
		def.run(c)
	})
}

func nameHash(s string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(s))
	return f.Sum64()
}

// checkT is what a case sees: the harness, a seeded random source, a
// private directory, and failure reporting that works with or without a
// testing.T.
type checkT struct {
	ctx   context.Context
	h     Harness
	caps  driver.Capabilities
	rng   *rand.Rand
	dir   string
	rec   *suite.Recorder
	conns []driver.Conn
}

func (c *checkT) errorf(format string, args ...any) {
	c.rec.Helper()
	c.rec.Errorf(format, args...)
}

func (c *checkT) fatalf(format string, args ...any) {
	c.rec.Helper()
	c.rec.Fatalf(format, args...)
}

func (c *checkT) logf(format string, args ...any) { c.rec.Logf(format, args...) }

func (c *checkT) skip(format string, args ...any) { c.rec.Skipf(format, args...) }

// path names a file in the case's directory.
func (c *checkT) path(name string) string { return filepath.Join(c.dir, name) }

// open opens a database and remembers to close it.
func (c *checkT) open(path string, capture bool) driver.Conn {
	c.rec.Helper()
	conn, err := c.h.Driver.Open(c.ctx, driver.Config{Path: path, PageCapture: capture})
	if err != nil {
		c.fatalf("Open(Path=%q, PageCapture=%v): %v", path, capture, err)
	}
	if conn == nil {
		c.fatalf("Open(Path=%q, PageCapture=%v) returned a nil Conn and no error", path, capture)
	}
	c.conns = append(c.conns, conn)
	return conn
}

// close closes conn now, failing the case on error.
func (c *checkT) close(conn driver.Conn) {
	c.rec.Helper()
	if i := slices.Index(c.conns, conn); i >= 0 {
		c.conns = slices.Delete(c.conns, i, i+1)
	}
	if err := conn.Close(); err != nil {
		c.fatalf("Close: %v", err)
	}
}

func (c *checkT) closeAll() {
	for i := len(c.conns) - 1; i >= 0; i-- {
		func() {
			defer func() { recover() }()
			c.conns[i].Close()
		}()
	}
	c.conns = nil
}

// exec runs sql and fails the case on error.
func (c *checkT) exec(conn driver.Conn, sql string, args ...any) driver.Result {
	c.rec.Helper()
	r, err := conn.Exec(c.ctx, sql, args...)
	if err != nil {
		c.fatalf("Exec(%s): %v", clip(sql), err)
	}
	return r
}

// query runs sql and returns every row, copied.
func (c *checkT) query(conn driver.Conn, sql string, args ...any) [][]any {
	c.rec.Helper()
	rows, err := queryAll(c.ctx, conn, sql, args...)
	if err != nil {
		c.fatalf("Query(%s): %v", clip(sql), err)
	}
	return rows
}

// queryOne runs sql expecting exactly one row with one column.
func (c *checkT) queryOne(conn driver.Conn, sql string, args ...any) any {
	c.rec.Helper()
	rows := c.query(conn, sql, args...)
	if len(rows) != 1 || len(rows[0]) != 1 {
		c.fatalf("Query(%s) returned %d rows, want one row of one column", clip(sql), len(rows))
	}
	return rows[0][0]
}

func (c *checkT) begin(conn driver.Conn) {
	c.rec.Helper()
	if err := conn.Begin(c.ctx); err != nil {
		c.fatalf("Begin: %v", err)
	}
}

func (c *checkT) commit(conn driver.Conn) {
	c.rec.Helper()
	if err := conn.Commit(c.ctx); err != nil {
		c.fatalf("Commit: %v", err)
	}
}

func (c *checkT) rollback(conn driver.Conn) {
	c.rec.Helper()
	if err := conn.Rollback(c.ctx); err != nil {
		c.fatalf("Rollback: %v", err)
	}
}

func (c *checkT) serialize(conn driver.Conn) []byte {
	c.rec.Helper()
	img, err := conn.Serialize(c.ctx)
	if err != nil {
		c.fatalf("Serialize: %v", err)
	}
	return img
}

func (c *checkT) restore(conn driver.Conn, img []byte) {
	c.rec.Helper()
	if err := conn.Restore(c.ctx, img); err != nil {
		c.fatalf("Restore(%d bytes): %v", len(img), err)
	}
}

func (c *checkT) pageSize(conn driver.Conn) int {
	c.rec.Helper()
	n, err := conn.PageSize(c.ctx)
	if err != nil {
		c.fatalf("PageSize: %v", err)
	}
	return n
}

func (c *checkT) pageCount(conn driver.Conn) int64 {
	c.rec.Helper()
	n, err := conn.PageCount(c.ctx)
	if err != nil {
		c.fatalf("PageCount: %v", err)
	}
	return n
}

// queryAll runs sql and copies every row out of the driver's buffers.
func queryAll(ctx context.Context, conn driver.Conn, sql string, args ...any) ([][]any, error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	var out [][]any
	for rows.Next() {
		out = append(out, copyRow(rows.Values()))
	}
	err = rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return out, err
}

func copyRow(vals []any) []any {
	row := make([]any, len(vals))
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			v = append([]byte{}, b...)
		}
		row[i] = v
	}
	return row
}

// clip shortens SQL for messages.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}
