//go:build !unix

package modernc_test

import "time"

// cpuTime is not measured on this platform; benchmarks report 0 CPU time.
func cpuTime() time.Duration { return 0 }
