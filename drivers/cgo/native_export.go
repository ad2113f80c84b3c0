package cgo

// The callbacks SQLite calls through the trampolines in native.go. A file
// with //export may only declare in its C preamble, so they live apart.

/*
#include <stdint.h>
*/
import "C"

import "runtime/cgo"

//export cellbAuthorize
func cellbAuthorize(h C.uintptr_t, action C.int, arg1, arg2, db, trigger *C.char) C.int {
	c := cgo.Handle(h).Value().(*conn)
	return C.int(c.authorize(int(action), C.GoString(arg1), C.GoString(arg2), C.GoString(db), C.GoString(trigger)))
}

// cellbWALCommitted runs right after a commit wrote frames to the WAL
// (VACUUM included, which fires no commit hook): the commit is read at
// once. It reports whether the WAL should now be checkpointed.
//
//export cellbWALCommitted
func cellbWALCommitted(h C.uintptr_t, db *C.char, frames C.int) C.int {
	c := cgo.Handle(h).Value().(*conn)
	if c.cap == nil || C.GoString(db) != "main" {
		return 0
	}
	c.cap.flag.set()
	c.cap.read(int64(frames))
	if c.cap.wantsCheckpoint() {
		return 1
	}
	return 0
}

//export cellbCheckpointed
func cellbCheckpointed(h C.uintptr_t, rc C.int) {
	c := cgo.Handle(h).Value().(*conn)
	if c.cap != nil && rc == 0 {
		c.cap.restartDue = true
	}
}
