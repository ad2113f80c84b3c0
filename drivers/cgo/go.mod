module github.com/cellb/cellb/drivers/cgo

go 1.26

require (
	github.com/cellb/cellb/conformance v0.0.0
	github.com/cellb/cellb/core v0.0.0
	github.com/mattn/go-sqlite3 v1.14.53
)

replace (
	github.com/cellb/cellb/conformance => ../../conformance
	github.com/cellb/cellb/core => ../../core
)
