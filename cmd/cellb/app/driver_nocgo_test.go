//go:build !cgo

package app

import "github.com/cellb/cellb/core/driver"

func cgoTestDrivers() []driver.Driver { return nil }
