package modernc

import (
	"fmt"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
)

// The translated SQLite speaks in addresses (uintptr) of memory that libc's
// allocator took from the OS, outside the Go heap: the garbage collector
// neither moves nor frees it, and a Go pointer must never be stored there.
// These helpers are the only places that turn such an address into
// something Go can read or write.

// cPointer views a C address as an unsafe.Pointer. Reinterpreting the
// variable's bytes, rather than converting the integer, keeps the intent
// explicit: the address is not, and never was, a Go pointer.
func cPointer(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}

// cBytes is n bytes of C memory at addr, without copying.
func cBytes(addr uintptr, n int) []byte {
	if addr == 0 || n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(cPointer(addr)), n)
}

// cReadPtr reads a pointer-sized out-parameter.
func cReadPtr(addr uintptr) uintptr { return *(*uintptr)(cPointer(addr)) }

// cReadInt32 reads an int out-parameter.
func cReadInt32(addr uintptr) int32 { return *(*int32)(cPointer(addr)) }

// goString copies a NUL-terminated C string; a NULL pointer gives "".
func goString(addr uintptr) string {
	if addr == 0 {
		return ""
	}
	return libc.GoString(addr)
}

// cStringIs reports whether the C string at addr is s, reading no byte
// past the first that differs (so never past the string's NUL).
func cStringIs(addr uintptr, s string) bool {
	if addr == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if *(*byte)(cPointer(addr + uintptr(i))) != s[i] {
			return false
		}
	}
	return *(*byte)(cPointer(addr + uintptr(len(s)))) == 0
}

// cMalloc allocates n bytes (at least one) with libc's allocator; free it
// with cFree.
func cMalloc(tls *libc.TLS, n int) (uintptr, error) {
	if n < 1 {
		n = 1
	}
	p := libc.Xmalloc(tls, types.Size_t(n))
	if p == 0 {
		return 0, fmt.Errorf("modernc: cannot allocate %d bytes of C memory", n)
	}
	return p, nil
}

// cFree frees memory from cMalloc or libc.CString; 0 is ignored.
func cFree(tls *libc.TLS, p uintptr) {
	if p != 0 {
		libc.Xfree(tls, p)
	}
}

// cStringAlloc copies s into C memory with a terminating NUL.
func cStringAlloc(tls *libc.TLS, s string) (uintptr, error) {
	p, err := cMalloc(tls, len(s)+1)
	if err != nil {
		return 0, err
	}
	b := cBytes(p, len(s)+1)
	copy(b, s)
	b[len(s)] = 0
	return p, nil
}
