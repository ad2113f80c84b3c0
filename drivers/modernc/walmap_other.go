//go:build !linux

package modernc

import "os"

// walMapping reads nothing on this platform: the WAL is read with ReadAt
// (see walmap_linux.go).
type walMapping struct{}

func (m *walMapping) view(*os.File, int64) []byte { return nil }

func (m *walMapping) unmap() {}
