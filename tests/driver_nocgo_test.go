//go:build !cgo

package tests

import "github.com/cellb/cellb/core/driver"

func cgoTestDrivers() []driver.Driver { return nil }
