package celltest

import (
	"context"

	"github.com/cellb/cellb/core/driver"
)

// noCaptureDriver hides a driver's page capture.
type noCaptureDriver struct{ driver.Driver }

func (d noCaptureDriver) Capabilities() driver.Capabilities {
	caps := d.Driver.Capabilities()
	caps.PageCapture = false
	return caps
}

func (d noCaptureDriver) Open(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	cfg.PageCapture = false
	return d.Driver.Open(ctx, cfg)
}

// WithoutPageCapture returns d as a driver without page capture: its
// connections are opened without Config.PageCapture and it declares none,
// so the runtime hands logs commit-time images instead of captured pages.
// Run the suite on it too (drivers/wasm does), so that path runs in every
// test run, not only with drivers that lack capture.
func WithoutPageCapture(d driver.Driver) driver.Driver { return noCaptureDriver{d} }
