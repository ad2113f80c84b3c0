package host

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cellb/cellb/core/shard"
)

// maxSocketPath is the longest unix socket path every supported platform
// accepts (sun_path is 104 bytes on the BSDs and macOS, 108 on Linux).
const maxSocketPath = 100

// listenLocal opens the unix socket other processes on this host route
// calls to (mode 0600: only this user's processes may send them). A path
// too long for a socket leaves routing off.
func (h *Host) listenLocal(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	removeDeadSockets(dir)
	var tag [4]byte
	if _, err := rand.Read(tag[:]); err != nil {
		return err
	}
	// Absolute: other processes, with other working directories, read it
	// from the holder record.
	path, err := filepath.Abs(filepath.Join(dir, fmt.Sprintf("%s%d-%x.sock", shard.SocketPrefix, os.Getpid(), tag)))
	if err != nil {
		return err
	}
	if len(path) > maxSocketPath {
		return fmt.Errorf("socket path %s is longer than %d bytes", path, maxSocketPath)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		os.Remove(path)
		return err
	}
	h.localLn, h.localPath = ln, path
	return nil
}

// removeDeadSockets deletes the sockets of processes that died without
// removing theirs: nothing accepts on them any more.
func removeDeadSockets(dir string) {
	old, _ := filepath.Glob(filepath.Join(dir, "serve-*.sock")) // before SocketPrefix
	paths, _ := filepath.Glob(filepath.Join(dir, shard.SocketPrefix+"*.sock"))
	for _, p := range append(old, paths...) {
		c, err := net.DialTimeout("unix", p, time.Second)
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			os.Remove(p)
		}
	}
}
