module github.com/cellb/cellb/drivers/cgo

go 1.26

require (
	github.com/cellb/cellb/conformance v0.1.0
	github.com/cellb/cellb/core v0.1.0
	github.com/mattn/go-sqlite3 v1.14.53
)

require (
	github.com/pierrec/lz4/v4 v4.1.23 // indirect
	github.com/superfly/ltx v0.5.3 // indirect
)
