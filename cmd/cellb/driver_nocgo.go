//go:build !cgo

package main

import "github.com/cellb/cellb/core/driver"

// cgoAvailable: this binary was built without cgo (CGO_ENABLED=0, or no C
// compiler), so drivers/cgo, which compiles SQLite's C source, is not in it.
func cgoAvailable() error { return errNoCgo }

// cgoDriver refuses, as cgoAvailable does.
func cgoDriver(commitSync) (driver.Driver, error) { return nil, errNoCgo }
