package cell

// Bounds of DefaultMaxOpenCells.
const (
	fallbackMaxOpenCells = 4096
	minMaxOpenCells      = 64
	// descriptorsPerCell: a cell in WAL mode holds its database, -wal and
	// -shm files; a quarter of the limit stays for sockets, logs and the
	// bucket's connections.
	descriptorsPerCell = 3
)

// DefaultMaxOpenCells is the cap on open cells when Options.MaxOpenCells is
// zero: three quarters of the process's file-descriptor limit, three
// descriptors a cell (so a burst of activations fails by eviction, not by
// "too many open files"), at least 64; 4096 where the limit is unknown.
func DefaultMaxOpenCells() int {
	limit := openFileLimit()
	if limit == 0 || limit > 1<<30 {
		return fallbackMaxOpenCells
	}
	return max(int(limit*3/4/descriptorsPerCell), minMaxOpenCells)
}
