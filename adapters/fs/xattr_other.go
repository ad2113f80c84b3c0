//go:build unix && !linux

package fs

import "golang.org/x/sys/unix"

// errNoAttrData is the errno of reading an attribute the file lacks.
const errNoAttrData = unix.ENOATTR
