package modernc

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// cFunc turns a Go function declared at package level into the value the
// translated C code stores as a function pointer. The translated code calls
// such a pointer by reinterpreting it as a Go func value, so the uintptr
// must be the func value's own word, which is what this reads. Closures are
// not allowed: nothing would keep their context alive.
func cFunc[F any](f F) uintptr {
	return *(*uintptr)(unsafe.Pointer(&struct{ f F }{f}))
}

// connHandles maps the integer a connection hands SQLite as its callbacks'
// user-data argument back to that connection.
//
// It is process-wide state, which CellB otherwise avoids, because nothing
// else can do the job: a C callback receives only that pointer-sized
// integer, a Go pointer must not be stored in C memory, and a callback
// must be a package-level function (see cFunc), so the way back to the
// connection has to be a table the function can reach. An entry lives
// exactly as long as its connection is open.
var connHandles struct {
	next atomic.Uintptr
	m    sync.Map // uintptr -> *Conn
}

func registerConn(c *Conn) uintptr {
	h := connHandles.next.Add(1)
	connHandles.m.Store(h, c)
	return h
}

func unregisterConn(h uintptr) { connHandles.m.Delete(h) }

func lookupConn(h uintptr) *Conn {
	v, ok := connHandles.m.Load(h)
	if !ok {
		return nil
	}
	return v.(*Conn)
}
