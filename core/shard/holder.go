package shard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cellb/cellb/core/atomicfile"
)

// Holder is who holds a shard, as the holder itself recorded it in
// holder-<i>.json when it took the shard's lock: its process id and the
// local address it serves routed calls on. The record is advisory — the
// lock decides who holds the shard — so a stale record (its writer let the
// shard go, or died) only sends a call to a process that then refuses it
// or finds the shard free.
type Holder struct {
	PID  int    `json:"pid"`
	Addr string `json:"addr"`
}

func holderPath(dir string, i int) string {
	return filepath.Join(dir, "holder-"+strconv.Itoa(i)+".json")
}

// writeHolder records h as shard i's holder; the caller holds the lock.
// The record replaces the old one atomically (atomicfile), so a reader
// sees a whole record or the previous one, also after a crash.
func writeHolder(dir string, i int, h Holder) error {
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(holderPath(dir, i), data, 0o644)
}

// clearHolder removes shard i's record; the caller still holds the lock.
func clearHolder(dir string, i int) error {
	err := os.Remove(holderPath(dir, i))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// readHolder returns shard i's record; false when there is none (the
// holder serves no address) or it cannot be read.
func readHolder(dir string, i int) (Holder, bool) {
	data, err := os.ReadFile(holderPath(dir, i))
	if err != nil {
		return Holder{}, false
	}
	var h Holder
	if err := json.Unmarshal(data, &h); err != nil || h.Addr == "" {
		return Holder{}, false
	}
	return h, true
}

func (h Holder) String() string { return fmt.Sprintf("pid %d", h.PID) }
