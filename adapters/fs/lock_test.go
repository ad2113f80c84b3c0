//go:build unix

package fs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// otherProcess opens stripe i's lock file on its own descriptor: flock(2)
// treats it as another owner, as it would another process.
func otherProcess(t *testing.T, dir string, i int) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, lockDir, fmt.Sprintf("%02x", i)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A wait that is cancelled while another process holds the lock gives the
// stripe back once the abandoned flock ends: taken, then released, so the
// other process can lock again.
func TestLockCancelWhileAnotherProcessHolds(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := s.d.locks
	const i = 7
	release, err := l.lock(t.Context(), i) // creates the lock file
	if err != nil {
		t.Fatal(err)
	}
	release()
	other := otherProcess(t, dir, i)
	if err := unix.Flock(int(other.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	// With ctx already ended the wait may stop before taking the stripe;
	// try until one call took it, found the other holder and left its
	// flock waiting (the stripe stays held).
	for len(l.stripe[i].turn) == 0 {
		if _, err := l.lock(cancelled, i); !errors.Is(err, context.Canceled) {
			t.Fatalf("lock with a cancelled ctx = %v, want context.Canceled", err)
		}
	}
	// The other process lets go: the abandoned wait takes the lock and
	// must give it back.
	if err := unix.Flock(int(other.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(l.stripe[i].turn) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stripe is still held 10 s after the other process released the lock")
		}
		time.Sleep(time.Millisecond)
	}
	if err := unix.Flock(int(other.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("the other process cannot take the lock after the abandoned wait ended: %v (it was never released)", err)
	}
	unix.Flock(int(other.Fd()), unix.LOCK_UN)
	// And this process can take it again.
	release, err = l.lock(t.Context(), i)
	if err != nil {
		t.Fatal(err)
	}
	release()
}

// Releasing keeps the stripe's lock file open: one descriptor per stripe
// for the store's life, not one open per write.
func TestLockKeepsItsDescriptor(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := s.d.locks
	release, err := l.lock(t.Context(), 3)
	if err != nil {
		t.Fatal(err)
	}
	f := l.stripe[3].file
	release()
	release, err = l.lock(t.Context(), 3)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if f == nil || l.stripe[3].file != f {
		t.Errorf("the stripe's lock file was reopened between two locks (%p, then %p)", f, l.stripe[3].file)
	}
}
