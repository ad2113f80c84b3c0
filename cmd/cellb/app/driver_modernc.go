//go:build cellb_modernc

package app

import (
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/drivers/modernc"
)

func init() { optional["modernc"] = newModernc }

// newModernc is drivers/modernc with synchronous=pragma ("": SQLite's
// default, for a changeset restore's scratch database).
func newModernc(pragma string) driver.Driver {
	return modernc.New(modernc.Options{Synchronous: pragma})
}
