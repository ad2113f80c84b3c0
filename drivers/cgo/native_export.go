//go:build cgo

package cgo

// The callback SQLite calls through the trampoline in native.go. A file
// with //export may only declare in its C preamble, so it lives apart.

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
