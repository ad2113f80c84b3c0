//go:build !cgo

// Without cgo (CGO_ENABLED=0, or no C compiler found) this package is
// empty on purpose: it compiles, so `go build ./...` and `go vet ./...` of
// the whole repository work everywhere, but it exports nothing. A program
// that uses Driver then fails at build time ("undefined: cgo.Driver")
// rather than at run time; build it with CGO_ENABLED=1 and a C compiler
// (gcc or clang), or pick a pure-Go driver (drivers/wasm, drivers/modernc).
// A program that offers this driver only when it is available imports it
// from a file with a `//go:build cgo` constraint, as cmd/cellb does.

package cgo
