package durability

import (
	"os"
	"syscall"
)

// datasync flushes f's data and the metadata needed to read it back (its
// size), not its timestamps: what SQLite itself does on Linux.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
