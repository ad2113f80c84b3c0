//go:build unix

package fs

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// locker serialises the writers of a key across goroutines and processes.
//
// Across processes it uses flock(2) on one file per stripe of keys: the
// kernel drops the lock when the holding process dies, however it dies, so
// a writer killed mid-write never wedges the key. afero has no locking,
// which is why this one piece talks to the OS through golang.org/x/sys/unix.
//
// Within a process, flock alone would do (each open file description is
// its own lock owner), but every blocked flock call pins an OS thread and
// cannot be cancelled. So goroutines first queue on a channel per stripe,
// which honours ctx, and only the head of the queue waits in flock, using
// one descriptor per stripe that the Store keeps open.
type locker struct {
	fsys  afero.Fs
	ready func() error // creates lockDir on first use

	stripe [stripes]struct {
		turn chan struct{} // holds one token while a goroutine owns the stripe
		file afero.File    // opened on first use, guarded by turn
		fd   int           // file's descriptor
	}
}

// fder is the part of *os.File flock needs.
type fder interface{ Fd() uintptr }

var errNoFd = errors.New("the file system's files expose no descriptor (Fd method), so they cannot be locked")

func newLocker(fsys afero.Fs, ready func() error) *locker {
	l := &locker{fsys: fsys, ready: ready}
	for i := range l.stripe {
		l.stripe[i].turn = make(chan struct{}, 1)
	}
	return l
}

// lock takes stripe i. The returned function releases it. A cancelled ctx
// stops the wait; nothing is held afterwards.
func (l *locker) lock(ctx context.Context, i int) (func(), error) {
	st := &l.stripe[i]
	select {
	case st.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	fd, err := l.fd(i)
	if err != nil {
		<-st.turn
		return nil, err
	}
	release := func() {
		if err := unix.Flock(fd, unix.LOCK_UN); err != nil {
			// Unlocking a valid descriptor cannot fail; if it does, close
			// the descriptor, which drops the lock for certain.
			st.file.Close()
			st.file = nil
		}
		<-st.turn
	}
	err = ignoringEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
	if err == nil {
		return release, nil
	}
	if err != unix.EWOULDBLOCK {
		<-st.turn
		return nil, &os.PathError{Op: "flock", Path: st.file.Name(), Err: err}
	}
	// Another process holds it: wait in the kernel, off this goroutine,
	// so ctx can still end the wait.
	done := make(chan error, 1)
	go func() { done <- ignoringEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX) }) }()
	select {
	case err := <-done:
		if err != nil {
			<-st.turn
			return nil, &os.PathError{Op: "flock", Path: st.file.Name(), Err: err}
		}
		return release, nil
	case <-ctx.Done():
		// Keep the stripe until the abandoned wait ends, then let go.
		go func() {
			if <-done == nil {
				release()
			} else {
				<-st.turn
			}
		}()
		return nil, ctx.Err()
	}
}

// fd opens stripe i's lock file if needed. The caller owns the stripe.
func (l *locker) fd(i int) (int, error) {
	st := &l.stripe[i]
	if st.file != nil {
		return st.fd, nil
	}
	if err := l.ready(); err != nil {
		return -1, err
	}
	name := fmt.Sprintf("%s/%02x", lockDir, i)
	// Read-only is enough for flock(2), and lets readers without write
	// permission take the lock when they must.
	f, err := l.fsys.OpenFile(name, os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		return -1, err
	}
	fdf, ok := f.(fder)
	if bp, isBase := f.(*afero.BasePathFile); !ok && isBase {
		// afero's BasePathFs wraps *os.File without passing Fd through.
		fdf, ok = bp.File.(fder)
	}
	if !ok {
		f.Close()
		return -1, errNoFd
	}
	st.file, st.fd = f, int(fdf.Fd())
	return st.fd, nil
}

// close waits for every stripe to be free and closes the lock files.
func (l *locker) close() error {
	var errs []error
	for i := range l.stripe {
		st := &l.stripe[i]
		st.turn <- struct{}{}
		if st.file != nil {
			errs = append(errs, st.file.Close())
			st.file = nil
		}
	}
	return errors.Join(errs...)
}
