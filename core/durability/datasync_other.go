//go:build !linux

package durability

import "os"

// datasync flushes f; without fdatasync, with a full sync.
func datasync(f *os.File) error { return f.Sync() }
