package app

import (
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/drivers/modernc"
)

// The tests run the modernc driver and the changeset mode whatever tags
// the test binary was built with (the binary cellb itself needs
// cellb_modernc: driver_modernc.go).
func init() {
	if optional["modernc"] == nil {
		optional["modernc"] = func(pragma string) driver.Driver { return modernc.New(modernc.Options{Synchronous: pragma}) }
	}
}
