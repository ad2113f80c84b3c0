package modernc_test

import (
	"testing"

	"github.com/cellb/cellb/conformance/drivertest"
	"github.com/cellb/cellb/drivers/modernc"
)

func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{Driver: modernc.New(modernc.Options{})})
}

func TestConformanceRejectsTwins(t *testing.T) {
	drivertest.RunTwins(t, drivertest.Harness{Driver: modernc.New(modernc.Options{})})
}
