//go:build !cgo

package main

import "github.com/cellb/cellb/core/driver"

func cgoTestDrivers() []driver.Driver { return nil }
