package drivertest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/cellb/cellb/core/driver"
)

// SeedEnv is the environment variable that fixes the seed of the random
// workloads when Harness.Seed is zero, so a failure seen once replays.
const SeedEnv = "CELLB_DRIVERTEST_SEED"

// Defaults for the Harness knobs.
const (
	DefaultBulkRows = 100_000
	DefaultSteps    = 40
)

// Harness describes the driver under test and how hard to push it.
type Harness struct {
	// Driver is the driver under test.
	Driver driver.Driver
	// Dir is where the cases create their database files, one fresh
	// subdirectory per case; a failed case's subdirectory is kept for
	// inspection. Empty means a temporary directory removed afterwards
	// (t.TempDir under Run).
	Dir string
	// Seed fixes every random workload. Zero means SeedEnv if set, else a
	// random seed (which failures print).
	Seed int64
	// BulkRows is the number of rows written by the single large
	// transaction of the capture/bulk case. Zero means DefaultBulkRows.
	BulkRows int
	// Steps is the number of random steps in each workload case. Zero
	// means DefaultSteps.
	Steps int
}

// Cases are chosen with suite.Only and suite.Skip; the Harness holds
// nothing to release.

// resolved fills the defaults. It fails only on a malformed SeedEnv.
func (h Harness) resolved() (Harness, error) {
	if h.Driver == nil {
		return h, fmt.Errorf("drivertest: Harness.Driver is nil")
	}
	if h.Seed == 0 {
		if s := strings.TrimSpace(os.Getenv(SeedEnv)); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n == 0 {
				return h, fmt.Errorf("drivertest: %s=%q is not a non-zero integer", SeedEnv, s)
			}
			h.Seed = n
		}
	}
	for h.Seed == 0 {
		h.Seed = rand.Int64()
	}
	if h.BulkRows <= 0 {
		h.BulkRows = DefaultBulkRows
	}
	if h.Steps <= 0 {
		h.Steps = DefaultSteps
	}
	return h, nil
}
