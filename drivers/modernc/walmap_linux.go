//go:build linux

package modernc

import (
	"os"
	"syscall"
)

// walMapping maps the WAL file read-only, so that reading a commit's frames
// right after SQLite wrote them costs a memory copy rather than a system
// call (on a busy virtual machine the read call was the largest part of
// what capture adds to a small transaction). The mapping may reach past
// the end of the file; only bytes SQLite has reported written are ever
// read through it, since touching a mapped page past the end of the file
// would fault.
type walMapping struct {
	data []byte
}

// view returns the first size bytes of f through the mapping, mapping (or
// remapping larger) as needed; nil if the file cannot be mapped, and the
// caller then reads the file.
func (m *walMapping) view(f *os.File, size int64) []byte {
	if size <= 0 {
		return nil
	}
	if int64(len(m.data)) < size {
		m.unmap()
		const step = 4 << 20
		n := (2*size + step - 1) / step * step
		if n != int64(int(n)) {
			return nil
		}
		data, err := syscall.Mmap(int(f.Fd()), 0, int(n), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			return nil
		}
		m.data = data
	}
	return m.data[:size:size]
}

func (m *walMapping) unmap() {
	if m.data != nil {
		syscall.Munmap(m.data)
		m.data = nil
	}
}
