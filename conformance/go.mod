module github.com/cellb/cellb/conformance

go 1.26

require github.com/cellb/cellb/core v0.1.0

require (
	github.com/pierrec/lz4/v4 v4.1.23 // indirect
	github.com/superfly/ltx v0.5.3 // indirect
)
