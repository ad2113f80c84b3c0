package celltest

import (
	"context"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
)

// FirstRowOnly wraps a driver so that every query's rows end after the
// first (a driver that steps a statement once, as for a single-row
// lookup): a query of several rows reads as one. Like every celltest
// driver twin it declares no page capture.
func FirstRowOnly(d driver.Driver) driver.Driver { return firstRowDriver{d} }

type firstRowDriver struct{ driver.Driver }

func (d firstRowDriver) Capabilities() driver.Capabilities {
	caps := d.Driver.Capabilities()
	caps.PageCapture = false
	return caps
}

func (d firstRowDriver) Open(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	cfg.PageCapture = false
	c, err := d.Driver.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return firstRowConn{c}, nil
}

type firstRowConn struct{ driver.Conn }

func (c firstRowConn) Query(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
	r, err := c.Conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return &firstRow{Rows: r}, nil
}

type firstRow struct {
	driver.Rows
	n int
}

func (r *firstRow) Next() bool {
	if r.n > 0 {
		return false
	}
	r.n++
	return r.Rows.Next()
}

// Counters passes the wrapped rows' counters on (the fault is the rows
// alone).
func (r *firstRow) Counters() (int64, int64) {
	if cr, ok := r.Rows.(driver.CountedRows); ok {
		return cr.Counters()
	}
	return 0, 0
}

// NoLimits sets every one of Options.Limits negative: nothing is limited,
// as in a runtime that does not enforce Durable Objects' limits.
func NoLimits(o *cell.Options) {
	o.Limits = cell.Limits{MaxValueBytes: -1, MaxStatementBytes: -1, MaxBoundParameters: -1, MaxColumns: -1, MaxDatabaseBytes: -1}
}
