//go:build unix

package wasm

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used. On a
// machine shared with other work, wall-clock time depends on the load; CPU
// time does not.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
